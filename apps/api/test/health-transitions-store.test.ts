import { randomUUID } from 'node:crypto';
import { HEALTH_TRANSITION_FIELD, healthTransitionsStream } from '@slb/model';
import { until } from '@slb/test-support/fleet';
import { type Engine, engines, type TestStore } from '@slb/test-support/stores';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { planHealthChecks } from '../src/health/targets.js';
import { TransitionConsumer } from '../src/health/transitions.js';
import { servicesOn } from './store-services.js';

// Health checks on both engines (issue 23): the plan's filter on a JSON field, and the upsert that keeps a
// target's newest report (an older one arriving late changes nothing), written once for SQLite and PostgreSQL.

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const all = await engines('apps/api/test/health-transitions-store.test.ts');
let open: TestStore | undefined;
let consumer: TransitionConsumer | undefined;
let redis: Redis | undefined;
let prefix = '';

afterEach(async () => {
  await consumer?.close();
  consumer = undefined;
  if (redis) {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
    redis = undefined;
  }
  await open?.drop();
  open = undefined;
});

/** A tenant's LB with a group of one server, through the services. */
async function setUp(engine: Engine) {
  open = await engine.open();
  const { store } = open;
  const at0 = '2026-12-05T00:00:00.000Z';
  await store.write((q) =>
    q.insert(store.t.tenants).values({ id: 'ten-aaaaaaaaaaaaaaaaaaaa', name: 'a', createdAt: at0, updatedAt: at0 }),
  );
  const services = servicesOn(store);
  await services.addressPools.seed(['198.51.100.0/24']);
  const auth = { tokenId: 'tok-x', tenantId: 'ten-aaaaaaaaaaaaaaaaaaaa', role: 'member' as const };
  const scope = { tenantId: auth.tenantId };
  const lb = await services.loadBalancers.create(auth, { name: 'web' });
  const group = await services.serverGroups.create(scope, lb.id, {
    name: 'g',
    servers: [{ address: '10.0.0.1', port: 80 }],
  });
  return { store, services, scope, lb, group };
}

describe.each(all)('health checks on $name', (engine) => {
  it.skipIf(!engine.available)('plans checks for running listeners whose check is on, and no others', async () => {
    const { store, services, scope, lb, group } = await setUp(engine);
    const tcp = (port: number, extra = {}) =>
      services.listeners.create(scope, lb.id, { protocol: 'tcp', port, serverGroupId: group.id, ...extra });
    const checked = await tcp(80);
    await tcp(81, { healthCheck: { enabled: false } });
    const stopped = await tcp(82);
    await services.listeners.setStatus(scope, lb.id, stopped.id, 'stopped');
    const plan = await planHealthChecks(store);
    const targets = [...plan.probes.values()].flatMap((p) => p.targets.map((x) => x.listenerId));
    expect(targets).toEqual([checked.id]);
  });

  it.skipIf(!engine.available)(
    'stores the newest report of a target, and not an older one that comes late',
    async () => {
      const { store, services, scope, lb, group } = await setUp(engine);
      const [server] = (await services.serverGroups.toApi(group)).servers;
      const listener = await services.listeners.create(scope, lb.id, {
        protocol: 'tcp',
        port: 80,
        serverGroupId: group.id,
      });
      redis = new Redis(REDIS_URL);
      prefix = `test-${randomUUID()}`;
      consumer = new TransitionConsumer({
        store,
        redisUrl: REDIS_URL,
        keyPrefix: prefix,
        consumer: 'c1',
        blockMs: 100,
      });
      await consumer.start();
      const base = Date.now();
      const report = (status: string, ms: number) =>
        redis!.xadd(
          healthTransitionsStream(prefix),
          '*',
          HEALTH_TRANSITION_FIELD,
          JSON.stringify({
            listenerId: listener.id,
            serverId: server!.id,
            status,
            since: new Date(base + ms).toISOString(),
            lastError: status === 'abnormal' ? 'ECONNREFUSED' : null,
          }),
        );
      await report('abnormal', -10_000);
      await report('normal', -1_000);
      await report('abnormal', -5_000); // older than the stored one: stale
      const stats = consumer.stats;
      await until('all handled', () => stats.stored + stats.stale === 3, 5000);
      expect(stats).toMatchObject({ stored: 2, stale: 1 });
      const health = await services.health.forLoadBalancer(scope, lb.id);
      expect(health.map((h) => [h.status, h.since])).toEqual([['normal', new Date(base - 1_000).toISOString()]]);
    },
  );
});
