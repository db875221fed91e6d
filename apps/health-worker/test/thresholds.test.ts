import { HealthScheduler, TransitionConsumer } from '@slb/api/health';
import { serverHealth } from '@slb/db';
import { Backend, isolatedWorkerRun, REDIS_URL, until } from '@slb/test-support/health-worker';
import { createTestDb, type TestDb } from '@slb/test-support/test-db';
import { afterEach, expect, it } from 'vitest';
import { type CheckReport, HealthWorker } from '../src/app.js';

const { queue, keyPrefix, closers, cleanup } = isolatedWorkerRun();
afterEach(cleanup);

it('turns normal after exactly M successes and abnormal after exactly N failures, stored by the control plane', async () => {
  const backend = await Backend.start();
  closers.push(() => backend.stop());
  const t: TestDb = createTestDb();
  closers.push(() => t.close());
  const g = t.group();
  const s = t.server(g, '127.0.0.1', backend.port);
  const l = t.listener({
    serverGroupId: g,
    port: 80,
    healthCheck: { interval: 1, timeout: 1, healthyThreshold: 2, unhealthyThreshold: 3 },
  });

  const reports: CheckReport[] = [];
  const worker = new HealthWorker({
    redisUrl: REDIS_URL,
    queue,
    keyPrefix,
    concurrency: 10,
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
  expect(await scheduler.sync()).toMatchObject({ total: 1, upserted: 1 });

  const row = () => t.db.select().from(serverHealth).all()[0];
  // The worker reports a check after it records the transition, so the row can change first: wait for both.
  await until('normal', () => row()?.status === 'normal' && reports.length >= 2);
  // The state starts abnormal (never checked); exactly the 2nd success flips it.
  expect(reports.map((r) => [r.ok, r.messages.length])).toEqual([
    [true, 0],
    [true, 1],
  ]);
  expect(reports[1]!.messages[0]).toMatchObject({ listenerId: l, serverId: s, status: 'normal' });

  await backend.stop();
  await until('abnormal', () => row()?.status === 'abnormal' && reports.length >= 5);
  expect(reports.slice(2).map((r) => [r.ok, r.messages.length])).toEqual([
    [false, 0],
    [false, 0],
    [false, 1],
  ]);
  // The worker reports the detail (its log has it); the control plane stores what the tenant may see.
  expect(reports[4]!.messages[0]).toMatchObject({ status: 'abnormal', lastError: 'ECONNREFUSED' });
  expect(row()).toMatchObject({ lastError: 'failed' });

  await backend.listen();
  await until('normal again', () => row()?.status === 'normal' && reports.length >= 7);
  expect(reports.slice(5).map((r) => [r.ok, r.messages.length])).toEqual([
    [true, 0],
    [true, 1],
  ]);
  expect(consumer.stats).toMatchObject({ stored: 3, invalid: 0 });
}, 30_000);
