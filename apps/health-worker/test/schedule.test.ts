import { randomUUID } from 'node:crypto';
import { listeners, servers } from '@slb/db';
import { eq } from 'drizzle-orm';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { HealthScheduler } from '../../api/src/health/index.js';
import { createTestDb, DEFAULT_HEALTH_CHECK, type TestDb } from '../../api/src/health/test-db.js';
import { HealthWorker } from '../src/app.js';
import { Backend, cleanRedis, REDIS_URL, until } from './support.js';

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
  scheduler = new HealthScheduler({ db: t.db, redisUrl: REDIS_URL, queue, resyncIntervalMs: 0 });
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

it('writes only changed schedulers, so an unchanged sync keeps the schedule', async () => {
  const a = await backend();
  const g = t.group();
  t.server(g, '127.0.0.1', a.port);
  t.server(g, '127.0.0.2', a.port);
  const l = t.listener({ serverGroupId: g, port: 80, healthCheck: fast });
  expect(await scheduler.sync()).toMatchObject({ total: 2, upserted: 2, removed: 0 });
  expect(await scheduler.sync()).toMatchObject({ total: 2, upserted: 0, removed: 0, repaired: 0 });
  // Thresholds are not part of the probe: same scheduler, new payload, picked up by its next check.
  t.db
    .update(listeners)
    .set({ healthCheck: { ...DEFAULT_HEALTH_CHECK, ...fast, healthyThreshold: 7 } })
    .where(eq(listeners.id, l))
    .run();
  expect(await scheduler.sync()).toMatchObject({ total: 2, upserted: 2, removed: 0 });
  const next = await until('next jobs', async () => {
    const jobs = await scheduler.queue.getJobs(['delayed', 'waiting']);
    return jobs.length === 2 && jobs;
  });
  for (const job of next) expect(job.data.targets[0].healthyThreshold).toBe(7);
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
  expect(await scheduler.sync()).toMatchObject({ total: 1, removed: 1 });
  const aAfter = a.hits.length;
  t.db.update(listeners).set({ status: 'stopped' }).where(eq(listeners.id, l)).run();
  expect(await scheduler.sync()).toMatchObject({ total: 0, removed: 1 });
  const bAfter = b.hits.length;
  // Two intervals later: nothing new (a check already taken may still land).
  await new Promise((r) => setTimeout(r, 2200));
  expect(a.hits.length - aAfter).toBeLessThanOrEqual(1);
  expect(b.hits.length - bAfter).toBeLessThanOrEqual(1);
  expect(await scheduler.queue.getJobSchedulers()).toHaveLength(0);
});
