import { HealthScheduler, TransitionConsumer } from '@slb/api/health';
import { serverHealth } from '@slb/db';
import { Backend, isolatedWorkerRun, REDIS_URL, until } from '@slb/test-support/health-worker';
import { createTestDb, type TestDb } from '@slb/test-support/test-db';
import { afterEach, expect, it } from 'vitest';
import { type CheckReport, HealthWorker } from '../src/app.js';

// Defence in depth: a target in the worker's deny set (a stand-in for the cloud's Redis, written straight
// into the database as a server from before the policy would be) or in a special address class is never
// probed; it is reported abnormal with a coarse reason. The stand-in is a real socket that must see nothing.

const { queue, keyPrefix, closers, cleanup } = isolatedWorkerRun();
afterEach(cleanup);

it('never probes a denied target and reports it abnormal with a coarse reason', async () => {
  const redis = await Backend.start();
  closers.push(() => redis.stop());
  const t: TestDb = createTestDb();
  closers.push(() => t.close());
  const g = t.group();
  const denied = t.server(g, '::ffff:127.0.0.1', redis.port);
  const metadata = t.server(g, '169.254.169.254', 80);
  t.listener({
    serverGroupId: g,
    port: 80,
    healthCheck: { interval: 1, timeout: 1, healthyThreshold: 2, unhealthyThreshold: 2 },
  });

  const reports: CheckReport[] = [];
  const worker = new HealthWorker({
    redisUrl: REDIS_URL,
    queue,
    keyPrefix,
    concurrency: 10,
    backendDeny: [`127.0.0.1:${redis.port}`],
    onCheck: (r) => reports.push(r),
  });
  closers.push(() => worker.close());
  const consumer = new TransitionConsumer({
    store: t.store,
    redisUrl: REDIS_URL,
    keyPrefix,
    consumer: 'c',
    blockMs: 100,
  });
  closers.push(() => consumer.close());
  const scheduler = new HealthScheduler({ store: t.store, redisUrl: REDIS_URL, queue, resyncIntervalMs: 0 });
  closers.push(() => scheduler.close());
  await consumer.start();
  await worker.start();
  await scheduler.sync();

  const rows = () => t.db.select().from(serverHealth).all();
  await until('both reported abnormal', () => rows().filter((r) => r.status === 'abnormal').length === 2, 20_000);
  for (const id of [denied, metadata]) {
    // The tenant sees the coarse reason only; the detail is in the worker's report and log.
    expect(rows().find((r) => r.serverId === id)).toMatchObject({ status: 'abnormal', lastError: 'failed' });
  }
  // A check is reported after its result is recorded, and the transition it records can reach the database
  // first: wait for the reports of the two failures each target needed.
  await until('four checks reported', () => reports.length >= 4, 10_000);
  expect(reports.every((r) => !r.ok && r.error === 'address not allowed')).toBe(true);
  expect(redis.hits).toEqual([]);
  const text = await worker.metrics.registry.getSingleMetricAsString('slb_health_backend_denied_total');
  expect(text).toMatch(/reason="cloud_endpoint"/);
  expect(text).toMatch(/reason="link_local"/);
}, 40_000);
