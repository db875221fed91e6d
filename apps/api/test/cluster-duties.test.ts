import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { HEALTH_TRANSITION_FIELD, healthTransitionsStream } from '@slb/model';
import { until } from '@slb/test-support/fleet';
import { deleteRedisKeys } from '@slb/test-support/redis-keys';
import { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterEach, expect, it, vi } from 'vitest';
import { buildApp } from '../src/app.js';
import { dutiesLeaseKeyOf } from '../src/lease/duties.js';
import { RedisLease } from '../src/lease/redis-lease.js';
import { type SignalName, signalChannelOf } from '../src/lease/signals.js';
import { ADMIN_TOKEN, call, LOCAL_BACKEND_POLICY, makeApp, newLoadBalancer, newTenant } from './helpers.js';

// The once-only duties under the lease, through the app factory. Two API replicas cannot share a SQLite file
// (it is opened with an exclusive lock), and two on their own files would be two deployments, so the other
// replica is a bare contender on the deployment's lease key: what a second API process would run.

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const TTL = 1500;
const DUTIES = ['event-pruning', 'health-schedule-sync', 'health-transitions'];
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

async function leaseHeldMetric(app: FastifyInstance): Promise<string | undefined> {
  const res = await app.inject({ method: 'GET', url: '/metrics' });
  return /^slb_api_duties_lease_held (\d)$/m.exec(res.body)?.[1];
}

async function rivalOn(key: string, holderId: string): Promise<RedisLease> {
  const redis = new Redis(REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  await new Promise((resolve) => redis.once('ready', resolve));
  const lease = new RedisLease({ redis, key, holderId, ttlMs: TTL });
  cleanups.push(async () => {
    await lease.stop();
    redis.disconnect();
  });
  lease.start();
  return lease;
}

/** An API on its own database, ready while another replica (a bare contender) holds the deployment's lease. */
async function apiBehindRival() {
  const dir = mkdtempSync(join(tmpdir(), 'slb-duties-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  // Built, not yet ready: the namespace exists, the lease is not contended yet.
  const app = await buildApp({
    dbPath: join(dir, 'slb.db'),
    adminToken: ADMIN_TOKEN,
    backendPolicy: LOCAL_BACKEND_POLICY,
    redisUrl: REDIS_URL,
    lease: { ttlMs: TTL, holderId: 'api-under-test' },
  });
  cleanups.push(() => app.close());
  const ns = app.namespace;
  const key = dutiesLeaseKeyOf(ns.clusterId);
  cleanups.push(() =>
    deleteRedisKeys(REDIS_URL, [`${ns.clusterId}:*`, `${ns.healthKeyPrefix}:*`, `bull:${ns.healthQueue}:*`]),
  );
  const redis = new Redis(REDIS_URL);
  const queue = new Queue(ns.healthQueue, { connection: { url: REDIS_URL } });
  cleanups.push(async () => {
    await queue.close();
    redis.disconnect();
  });
  const rival = await rivalOn(key, 'other-replica');
  await until('the rival holding', () => rival.held, 5000);
  await app.ready();
  return { app, ns, key, redis, queue, rival };
}

it('runs the duties only while the API holds the lease: not behind another holder, at once after it dies, and stops them when it is lost', async () => {
  const { app, ns, key, redis, queue, rival } = await apiBehindRival();
  await new Promise((r) => setTimeout(r, 2 * TTL));
  expect(app.duties.held).toBe(false);
  expect(app.duties.active).toEqual([]);
  expect(await leaseHeldMetric(app)).toBe('0');

  // It serves REST all the same; the schedule and the transitions are left to the holder.
  const { token } = await newTenant(app);
  const { lbId, sgId, servers } = await newLoadBalancer(app, token);
  const lsn = await call(app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
    protocol: 'tcp',
    port: 80,
    serverGroupId: sgId,
  });
  expect(lsn.status).toBe(201);
  const stream = healthTransitionsStream(ns.healthKeyPrefix);
  const send = (status: string, ms: number) =>
    redis.xadd(
      stream,
      '*',
      HEALTH_TRANSITION_FIELD,
      JSON.stringify({
        listenerId: lsn.body.id,
        serverId: servers[0]?.id,
        status,
        since: new Date(Date.now() - 5000 + ms).toISOString(),
        lastError: null,
      }),
    );
  const healthEvents = async () =>
    ((await call(app, token, 'GET', `/v1/load-balancers/${lbId}/events?kind=health`)).body.items as unknown[]).length;
  await send('abnormal', 0);
  await new Promise((r) => setTimeout(r, 300));
  expect(await queue.getJobSchedulersCount()).toBe(0);
  expect(await healthEvents()).toBe(0);

  // The holder dies without releasing: this replica takes over within ttl + one renewal, with a higher token,
  // writes the schedule and stores the transition left waiting.
  const rivalToken = rival.token ?? 0;
  rival.abandon();
  const diedAt = performance.now();
  const gainedAt = await until('the takeover', () => app.duties.held && performance.now(), 5000);
  const takeoverMs = Math.round(gainedAt - diedAt);
  console.log(`duties lease takeover after the holder died: ${takeoverMs} ms (ttl ${TTL} ms)`);
  expect(takeoverMs).toBeLessThanOrEqual(TTL + (app.duties.lease?.timing.renewEveryMs ?? 0) + 150);
  expect(app.duties.lease?.token).toBeGreaterThan(rivalToken);
  await until('the duties started', () => app.duties.active.length === DUTIES.length, 5000);
  expect(app.duties.active.sort()).toEqual(DUTIES);
  await until('the schedule written', async () => (await queue.getJobSchedulersCount()) > 0, 5000);
  await until('the waiting transition stored', async () => (await healthEvents()) === 1, 5000);
  expect(await leaseHeldMetric(app)).toBe('1');

  // A second contender cannot take it from a live holder.
  const second = await rivalOn(key, 'third-replica');
  await new Promise((r) => setTimeout(r, 2 * TTL));
  expect([app.duties.held, second.held]).toEqual([true, false]);

  // The lease is taken from under it (it expired during a partition, say): its next renewal fails, the duties
  // stop, and the new holder's are the only ones.
  await redis.del(key);
  await until('the lease lost', () => !app.duties.held && app.duties.active.length === 0, 5000);
  await until('the other holding', () => second.held, 5000);
  expect(await leaseHeldMetric(app)).toBe('0');
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  expect(metrics).toMatch(/^slb_api_duties_lease_changes_total\{change="gained"\} 1$/m);
  expect(metrics).toMatch(/^slb_api_duties_lease_changes_total\{change="lost"\} 1$/m);
  await send('normal', 1000);
  await new Promise((r) => setTimeout(r, 300));
  expect(await healthEvents()).toBe(1);
});

it('runs every duty in a lone API without Redis, as before the lease', async () => {
  const t = await makeApp();
  cleanups.push(() => t.close());
  expect(t.app.duties.lease).toBeNull();
  await until('the duties started', () => t.app.duties.active.length > 0, 2000);
  expect(t.app.duties.held).toBe(true);
  expect(t.app.duties.active).toEqual(['event-pruning']);
  expect(await leaseHeldMetric(t.app)).toBe('1');
});

it('signals the other replicas: a write asks the holder for a schedule sync, a stored transition reaches every hub', async () => {
  const { app, ns, redis, queue, rival } = await apiBehindRival();
  const heard: { channel: string; message: { from: string; payload: string } }[] = [];
  const listener = new Redis(REDIS_URL);
  cleanups.push(async () => listener.disconnect());
  listener.on('message', (channel: string, raw: string) => heard.push({ channel, message: JSON.parse(raw) }));
  await listener.subscribe(
    signalChannelOf(ns.clusterId, 'health-sync'),
    signalChannelOf(ns.clusterId, 'health-changed'),
  );
  const from = (name: SignalName, payload = '') =>
    redis.publish(signalChannelOf(ns.clusterId, name), JSON.stringify({ from: 'other-replica', payload }));

  // Not the holder: a write that changes the checked targets asks the holder to sync.
  const { token } = await newTenant(app);
  const { lbId, sgId, servers } = await newLoadBalancer(app, token);
  const lsn = await call(app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
    protocol: 'tcp',
    port: 80,
    serverGroupId: sgId,
  });
  await until('a sync request sent', () => heard.some((h) => h.channel.endsWith(':health-sync')), 3000);
  expect(heard[0]?.message.from).toBe('api-under-test');
  // The holder stored a transition: this replica's hub pushes it to its own nodes.
  const healthChanged = vi.spyOn(app.controlHub, 'healthChanged');
  cleanups.push(async () => healthChanged.mockRestore());
  await from('health-changed', lsn.body.id);
  await until('the hub told', () => healthChanged.mock.calls.length > 0, 3000);
  expect(healthChanged).toHaveBeenCalledWith(lsn.body.id);

  // Holder now: another replica's sync request makes it sync at once, not at the next repair (30 s).
  rival.abandon();
  await until('the duties started', () => app.duties.active.length === 3, 5000);
  await until('the schedule written', async () => (await queue.getJobSchedulersCount()) > 0, 5000);
  const every = async () => (await queue.getJobSchedulers(0, -1)).map((s) => Number(s.every));
  expect(await every()).not.toContain(7000);
  // What another replica's write does to the shared database (here straight into the file), and its signal.
  const row = app.store.sqlite.prepare('SELECT health_check FROM listeners WHERE id = ?').get(lsn.body.id) as {
    health_check: string;
  };
  const check = { ...JSON.parse(row.health_check), interval: 7 };
  app.store.sqlite
    .prepare('UPDATE listeners SET health_check = ? WHERE id = ?')
    .run(JSON.stringify(check), lsn.body.id);
  await from('health-sync');
  await until('the new schedule written', async () => (await every()).includes(7000), 3000);
  // And a transition it stores is signalled to the others.
  heard.length = 0;
  await redis.xadd(
    healthTransitionsStream(ns.healthKeyPrefix),
    '*',
    HEALTH_TRANSITION_FIELD,
    JSON.stringify({
      listenerId: lsn.body.id,
      serverId: servers[0]?.id,
      status: 'abnormal',
      since: new Date(Date.now() - 1000).toISOString(),
      lastError: null,
    }),
  );
  await until('the transition signalled', () => heard.some((h) => h.channel.endsWith(':health-changed')), 5000);
  expect(heard.find((h) => h.channel.endsWith(':health-changed'))?.message).toEqual({
    from: 'api-under-test',
    payload: lsn.body.id,
  });
});
