import { randomUUID } from 'node:crypto';
import { HealthScheduler } from '@slb/api/health';
import { listeners, servers } from '@slb/db';
import type { HealthShardJob, HealthShardProbe } from '@slb/model';
import { Backend, cleanRedis, REDIS_URL, until } from '@slb/test-support/health-worker';
import { createTestDb, DEFAULT_HEALTH_CHECK, type TestDb } from '@slb/test-support/test-db';
import { eq } from 'drizzle-orm';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { HealthWorker } from '../src/app.js';

let queue: string;
let keyPrefix: string;
let t: TestDb;
let scheduler: HealthScheduler;
let worker: HealthWorker;
const closers: Array<() => Promise<void> | void> = [];
const fast = { interval: 1, timeout: 1, healthyThreshold: 2, unhealthyThreshold: 2 };

beforeEach(async () => {
  queue = `test-${randomUUID()}`;
  keyPrefix = `test-${randomUUID()}`;
  t = createTestDb();
  scheduler = new HealthScheduler({ store: t.store, redisUrl: REDIS_URL, queue, resyncIntervalMs: 0 });
  worker = new HealthWorker({ redisUrl: REDIS_URL, queue, keyPrefix, concurrency: 10 });
  await worker.start();
});
afterEach(async () => {
  await worker.close();
  await scheduler.close();
  for (const close of closers.splice(0).reverse()) await close();
  t.close();
  await cleanRedis(keyPrefix, queue);
});

async function backend(): Promise<Backend> {
  const b = await Backend.start();
  closers.push(() => b.stop());
  return b;
}

it('writes only changed shards, so an unchanged sync keeps the schedule', async () => {
  const a = await backend();
  const g1 = t.group();
  t.server(g1, '127.0.0.1', a.port);
  const l = t.listener({ serverGroupId: g1, port: 80, healthCheck: fast });
  const g2 = t.group();
  for (let i = 2; i < 10; i++) t.server(g2, `127.0.0.${i}`, a.port);
  t.listener({ serverGroupId: g2, port: 81, healthCheck: fast });
  const first = await scheduler.sync();
  expect(first).toMatchObject({ probes: 9, upserted: first.total, removed: 0 });
  expect(first.total).toBeGreaterThan(1);
  expect(await scheduler.sync()).toMatchObject({ total: first.total, upserted: 0, removed: 0, repaired: 0 });
  // Thresholds are not part of the probe: same shard, new payload, picked up by its next job.
  t.db
    .update(listeners)
    .set({ healthCheck: { ...DEFAULT_HEALTH_CHECK, ...fast, healthyThreshold: 7 } })
    .where(eq(listeners.id, l))
    .run();
  expect(await scheduler.sync()).toMatchObject({ total: first.total, upserted: 1, removed: 0 });
  const next = await until('next job of the changed shard', async () => {
    const jobs = await scheduler.queue.getJobs(['delayed', 'waiting']);
    return jobs.find((j) => j.data.probes.some((p: HealthShardProbe) => p.targets[0]!.listenerId === l));
  });
  const target = (next.data as HealthShardJob).probes.flatMap((p) => p.targets).find((x) => x.listenerId === l);
  expect(target?.healthyThreshold).toBe(7);
});

it('a changed check port is used from the next check on', async () => {
  const a = await backend();
  const b = await backend();
  const g = t.group();
  t.server(g, '127.0.0.1', a.port);
  const l = t.listener({ serverGroupId: g, port: 80, healthCheck: fast });
  await scheduler.sync();
  await until('first check on a', () => a.hits.length >= 1);
  t.db
    .update(listeners)
    .set({ healthCheck: { ...DEFAULT_HEALTH_CHECK, ...fast, port: b.port } })
    .where(eq(listeners.id, l))
    .run();
  scheduler.requestSync();
  const switched = await until('check on b', () => b.hits[0], 3000);
  await until('a second check on b', () => b.hits.length >= 2, 3000);
  // At most one check of the old settings was already under way when the change landed.
  expect(a.hits.filter((at) => at > switched + 50)).toHaveLength(0);
});

it('deleted servers and stopped listeners stop being checked after a sync', async () => {
  const a = await backend();
  const b = await backend();
  const g = t.group();
  const sa = t.server(g, '127.0.0.1', a.port);
  t.server(g, '127.0.0.1', b.port);
  const l = t.listener({ serverGroupId: g, port: 80, healthCheck: fast });
  await scheduler.sync();
  await until('both checked', () => a.hits.length >= 1 && b.hits.length >= 1);
  t.db.delete(servers).where(eq(servers.id, sa)).run();
  // Its shard is removed, or rewritten without it when b's probe shares it.
  const afterDelete = await scheduler.sync();
  expect(afterDelete).toMatchObject({ total: 1, probes: 1 });
  expect(afterDelete.removed + afterDelete.upserted).toBe(1);
  const aAfter = a.hits.length;
  t.db.update(listeners).set({ status: 'stopped' }).where(eq(listeners.id, l)).run();
  expect(await scheduler.sync()).toMatchObject({ total: 0, probes: 0, removed: 1 });
  const bAfter = b.hits.length;
  // Two intervals later: nothing new (a check already taken may still land). A fixed window on purpose: it
  // asserts that no check happens.
  await new Promise((r) => setTimeout(r, 2200));
  expect(a.hits.length - aAfter).toBeLessThanOrEqual(1);
  expect(b.hits.length - bAfter).toBeLessThanOrEqual(1);
  expect(await scheduler.queue.getJobSchedulers()).toHaveLength(0);
});

it('re-phases a shard whose place in the interval moved, and leaves the others be', async () => {
  const a = await backend();
  const g = t.group();
  for (let i = 1; i < 4; i++) t.server(g, `127.0.0.${i}`, a.port);
  t.listener({ serverGroupId: g, port: 80, healthCheck: { ...fast, interval: 5 } });
  const first = await scheduler.sync();
  const [moved, ...others] = await scheduler.queue.getJobSchedulers(0, -1, true);
  // As another version of the planner (another lead) would have left it: same shard, another offset.
  const offset = ((moved!.offset ?? 0) + 1000) % 5000 || 5000;
  await scheduler.queue.upsertJobScheduler(
    moved!.key,
    { every: 5000, offset },
    { name: 'health-shard', data: moved!.template?.data },
  );
  expect((await scheduler.queue.getJobSchedulers(0, -1, true)).find((s) => s.key === moved!.key)?.offset).toBe(offset);
  const fresh = new HealthScheduler({ store: t.store, redisUrl: REDIS_URL, queue, resyncIntervalMs: 0 });
  closers.push(() => fresh.close());
  expect(await fresh.sync()).toMatchObject({ total: first.total, upserted: 1, removed: 0 });
  const after = new Map((await scheduler.queue.getJobSchedulers(0, -1, true)).map((s) => [s.key, s]));
  expect(after.get(moved!.key)).toMatchObject({ offset: moved!.offset });
  expect((after.get(moved!.key)!.next ?? 0) % 5000).toBe(moved!.offset! % 5000);
  // The others keep their slot (a turn may have passed in between: the phase is what must not move).
  for (const o of others) expect((after.get(o.key)?.next ?? 0) % 5000).toBe((o.next ?? 0) % 5000);
});

it('the periodic repair puts back a lost schedule from the kept plan, without planning from the database again', async () => {
  const a = await backend();
  const g = t.group();
  t.server(g, '127.0.0.1', a.port);
  t.listener({ serverGroupId: g, port: 90, healthCheck: fast });
  const repairing = new HealthScheduler({ store: t.store, redisUrl: REDIS_URL, queue, resyncIntervalMs: 300 });
  closers.push(() => repairing.close());
  const first = await repairing.sync();
  expect(first).toMatchObject({ total: 1, probes: 1 });
  // Redis loses the schedule, and the database changes behind the scheduler's back (no requestSync).
  const [lost] = await repairing.queue.getJobSchedulers(0, -1, true);
  await repairing.queue.removeJobScheduler(lost!.key);
  t.server(g, '127.0.0.2', a.port);
  const back = await until('the repair re-creates the schedule', async () => {
    const now = await repairing.queue.getJobSchedulers(0, -1, true);
    return now.length === 1 ? now[0] : undefined;
  });
  // Repaired from the kept plan: one probe, not the two the database now holds.
  const probesOf = (s: { template?: { data?: unknown } }) =>
    (s.template?.data as HealthShardJob | undefined)?.probes.length ?? 0;
  expect(probesOf(back)).toBe(1);
  // A write that may change the targets plans afresh.
  repairing.requestSync();
  await until('the new server is scheduled', async () => {
    const all = await repairing.queue.getJobSchedulers(0, -1, true);
    return all.reduce((n, s) => n + probesOf(s), 0) === 2 ? true : undefined;
  });
});
