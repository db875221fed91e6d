import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { call, makeApp, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

// Each write route declares what it changes (config.writes, plugins/write-effects.ts); here, on the real
// app with its Redis, that every one does, and that the health checks are replanned after just those
// that declare a change of the checked targets.

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const WRITE_METHODS = ['post', 'put', 'patch', 'delete'];
let t: TestApp;
const queue = `test-${randomUUID()}`;
const prefix = `test-${randomUUID()}`;

beforeAll(async () => {
  t = await makeApp(undefined, {
    redisUrl: REDIS_URL,
    namespaceOverrides: { healthKeyPrefix: prefix, healthQueue: queue },
  });
});
afterAll(async () => {
  await t.close();
  const redis = new Redis(REDIS_URL);
  for (const pattern of [`${prefix}:*`, `*${queue}*`]) {
    const keys = await redis.keys(pattern);
    if (keys.length > 0) await redis.del(...keys);
  }
  await redis.quit();
});

describe('declared write effects', () => {
  it('every write operation of the API declares its effects', async () => {
    const document = t.app.swagger() as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((m) => WRITE_METHODS.includes(m))
        .map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
    );
    expect(operations.length).toBeGreaterThan(30);
    expect([...t.app.writeEffects.keys()].sort()).toEqual(operations.sort());
  });

  it.each([
    ['POST', '/v1/load-balancers/:lbId/listeners'],
    ['PATCH', '/v1/load-balancers/:lbId/listeners/:lsnId'],
    ['DELETE', '/v1/load-balancers/:lbId/listeners/:lsnId'],
    ['POST', '/v1/load-balancers/:lbId/listeners/:lsnId/start'],
    ['POST', '/v1/load-balancers/:lbId/listeners/:lsnId/stop'],
    ['POST', '/v1/load-balancers/:lbId/listeners/:lsnId/rules'],
    ['PATCH', '/v1/load-balancers/:lbId/listeners/:lsnId/rules/:ruleId'],
    ['DELETE', '/v1/load-balancers/:lbId/listeners/:lsnId/rules/:ruleId'],
    ['POST', '/v1/load-balancers/:lbId/server-groups/:sgId/servers'],
    ['DELETE', '/v1/load-balancers/:lbId/server-groups/:sgId/servers/:srvId'],
    ['DELETE', '/v1/load-balancers/:lbId'],
    ['DELETE', '/v1/load-balancers/:lbId/server-groups/:sgId'],
  ])('%s %s may change the checked targets', (method, url) => {
    expect(t.app.writeEffects.get(`${method} ${url}`)).toEqual({ nodes: true, healthTargets: true });
  });

  it.each([
    ['PATCH', '/v1/load-balancers/:lbId/server-groups/:sgId/servers/:srvId'],
    ['PATCH', '/v1/load-balancers/:lbId/server-groups/:sgId'],
    ['PATCH', '/v1/load-balancers/:lbId'],
    ['POST', '/v1/load-balancers'],
    ['POST', '/v1/load-balancers/:lbId/server-groups'],
    ['POST', '/v1/certificates'],
    ['DELETE', '/v1/acls/:aclId'],
    ['POST', '/v1/tenants/:tenantId/tokens'],
    ['PATCH', '/v1/nodes/:nodeId'],
    ['POST', '/v1/address-pools'],
    ['POST', '/v1/plans'],
  ])('%s %s does not', (method, url) => {
    expect(t.app.writeEffects.get(`${method} ${url}`)?.healthTargets).toBeFalsy();
  });

  it('replans the health checks after a write declaring the effect, and only then', async () => {
    const scheduler = t.app.healthScheduler!;
    const sync = vi.spyOn(scheduler, 'requestSync');
    const recompile = vi.spyOn(t.app.controlHub, 'changed');
    try {
      const { token } = await newTenant(t.app, 'effects');
      const { lbId, sgId, servers } = await newLoadBalancer(t.app, token);
      sync.mockClear();
      recompile.mockClear();

      const srv = `/v1/load-balancers/${lbId}/server-groups/${sgId}/servers`;
      const weight = await call(t.app, token, 'PATCH', `${srv}/${servers[0]!.id}`, { weight: 7 });
      expect(weight.status).toBe(200);
      expect(sync).not.toHaveBeenCalled();
      expect(recompile).toHaveBeenCalledWith(lbId);

      const added = await call(t.app, token, 'POST', srv, { servers: [{ address: '127.0.0.3', port: 9003 }] });
      expect(added.status).toBeLessThan(300);
      expect(sync).toHaveBeenCalledTimes(1);

      // A refused write changed nothing: no replanning.
      const refused = await call(t.app, token, 'POST', srv, { servers: [{ address: '127.0.0.3', port: 0 }] });
      expect(refused.status).toBeGreaterThanOrEqual(400);
      expect(sync).toHaveBeenCalledTimes(1);
    } finally {
      sync.mockRestore();
      recompile.mockRestore();
    }
  });
});
