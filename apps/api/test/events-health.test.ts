import { randomUUID } from 'node:crypto';
import { HEALTH_TRANSITION_FIELD, healthTransitionsStream } from '@slb/model';
import { until } from '@slb/test-support/fleet';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { call, makeApp, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

// `health` events: the transitions the health workers put on the deployment's stream, as the API applies them.

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
let t: TestApp;
let redis: Redis;
let prefix: string;
let queue: string;

beforeEach(async () => {
  prefix = `test-${randomUUID()}`;
  queue = `test-${randomUUID()}`;
  redis = new Redis(REDIS_URL);
  t = await makeApp(undefined, {
    redisUrl: REDIS_URL,
    namespaceOverrides: { healthKeyPrefix: prefix, healthQueue: queue },
  });
});
afterEach(async () => {
  await t.close();
  for (const pattern of [`${prefix}:*`, `*${queue}*`]) {
    const keys = await redis.keys(pattern);
    if (keys.length > 0) await redis.del(...keys);
  }
  await redis.quit();
});

it('records a server turning abnormal and normal again, with listener, address and reason, once each', async () => {
  const { token } = await newTenant(t.app);
  const { lbId, sgId, servers } = await newLoadBalancer(t.app, token);
  const lsn = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
    protocol: 'tcp',
    port: 80,
    serverGroupId: sgId,
  });
  const serverId = servers[0]!.id;
  const at = (ms: number) => new Date(Date.now() - 10_000 + ms).toISOString();
  const send = (m: object) =>
    redis.xadd(healthTransitionsStream(prefix), '*', HEALTH_TRANSITION_FIELD, JSON.stringify(m));
  const base = { listenerId: lsn.body.id, serverId };
  await send({ ...base, status: 'abnormal', since: at(0), lastError: 'ECONNREFUSED' });
  // The same status again (a worker restarted, say) is no transition.
  await send({ ...base, status: 'abnormal', since: at(1000), lastError: 'ECONNREFUSED' });
  await send({ ...base, status: 'normal', since: at(2000), lastError: null });

  const health = async () =>
    (await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}/events?kind=health`)).body.items as any[];
  const items = await until(
    'two health events',
    async () => {
      const got = await health();
      return got.length >= 2 && got;
    },
    8000,
  );
  await new Promise((r) => setTimeout(r, 300)); // a fixed window on purpose: no third event comes
  expect(await health()).toHaveLength(2);
  expect(items[1]).toMatchObject({
    kind: 'health',
    summary: 'server 127.0.0.1:9001 abnormal on listener tcp:80 (failed)',
    resourceId: serverId,
    actor: null,
    detail: {
      listenerId: lsn.body.id,
      serverId,
      address: '127.0.0.1',
      port: 9001,
      status: 'abnormal',
      previousStatus: null,
      reason: 'failed',
    },
  });
  expect(items[0]).toMatchObject({
    summary: 'server 127.0.0.1:9001 normal on listener tcp:80',
    detail: { status: 'normal', previousStatus: 'abnormal', reason: null },
  });
});
