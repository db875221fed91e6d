import { randomUUID } from 'node:crypto';
import { probeKey, resolveHealthCheck } from '@slb/health';
import { type HealthShardJob, redisOptionsFromUrl } from '@slb/model';
import { Backend, cleanRedis, until } from '@slb/test-support/health-worker';
import { Queue } from 'bullmq';
import { afterEach, expect, it } from 'vitest';
import { type CheckReport, HealthWorker } from './app.js';
import { WorkerMetrics } from './metrics.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const queueName = `test-${randomUUID()}`;
const keyPrefix = `test-${randomUUID()}`;
let queue: Queue | undefined;
let worker: HealthWorker | undefined;
const backends: Backend[] = [];
afterEach(async () => {
  await worker?.close();
  await queue?.close();
  for (const b of backends.splice(0)) await b.stop();
  await cleanRedis(keyPrefix, queueName);
});

function shard(ports: number[], offsets: number[]): HealthShardJob {
  return {
    shard: 'shard:2s:0/1',
    interval: 2,
    probes: ports.map((port, i) => {
      const settings = resolveHealthCheck({ interval: 2, timeout: 1 }, { listenerProtocol: 'tcp', serverPort: port });
      const target = { listenerId: `lsn-${i}`, serverId: `srv-${i}`, healthyThreshold: 2, unhealthyThreshold: 2 };
      return {
        key: probeKey('127.0.0.1', settings),
        address: '127.0.0.1',
        settings,
        offsetMs: offsets[i]!,
        targets: [target],
      };
    }),
  };
}

it('drops and counts jobs that are not in the catalog or whose payload is invalid', async () => {
  const metrics = new WorkerMetrics({ defaultMetrics: false });
  worker = new HealthWorker({ redisUrl: REDIS_URL, queue: queueName, keyPrefix, metrics });
  await worker.start();
  queue = new Queue(queueName, { connection: redisOptionsFromUrl(REDIS_URL) });
  await queue.add('health-shard', { shard: 's', interval: 2, probes: [{ key: 'k', address: '127.0.0.1' }] });
  await queue.add('health-check', shard([1], [0]).probes[0]);
  // Valid field by field, but the probe would fall outside its shard's interval.
  await queue.add('health-shard', shard([1], [2000]));
  await queue.add('reboot-everything', {});
  await until('4 dropped', async () => (await metrics.invalidJobs.get()).values[0]?.value === 4, 5000);
  expect((await metrics.checks.get()).values).toHaveLength(0);
});

it('runs every probe of a shard job once, at the job slot plus the probe offset', async () => {
  for (let i = 0; i < 3; i++) backends.push(await Backend.start());
  const metrics = new WorkerMetrics({ defaultMetrics: false });
  const reports: CheckReport[] = [];
  worker = new HealthWorker({
    redisUrl: REDIS_URL,
    queue: queueName,
    keyPrefix,
    metrics,
    onCheck: (r) => reports.push(r),
  });
  await worker.start();
  queue = new Queue(queueName, { connection: redisOptionsFromUrl(REDIS_URL) });
  const job = await queue.add(
    'health-shard',
    shard(
      backends.map((b) => b.port),
      [0, 300, 600],
    ),
    { delay: 100 },
  );
  const slot = job.timestamp + 100;
  await until('3 checks', () => reports.length === 3, 5000);
  await new Promise((r) => setTimeout(r, 200)); // a fixed window on purpose: no backend gets a second check
  expect(backends.map((b) => b.hits.length)).toEqual([1, 1, 1]);
  backends.forEach((b, i) => {
    expect(b.hits[0]!).toBeGreaterThanOrEqual(slot + [0, 300, 600][i]!);
    expect(b.hits[0]!).toBeLessThan(slot + [0, 300, 600][i]! + 250);
  });
  expect(reports.every((r) => r.ok)).toBe(true);
  const lateness = (await metrics.checkLateness.get()).values.find((v) => v.metricName?.endsWith('_count'));
  expect(lateness?.value).toBe(3);
  expect(await until('job done', async () => (await queue!.getJobCounts('completed', 'active')).active === 0)).toBe(
    true,
  );
});

it('skips a check whose turn passed a whole interval ago, and runs the rest of the shard', async () => {
  for (let i = 0; i < 2; i++) backends.push(await Backend.start());
  const metrics = new WorkerMetrics({ defaultMetrics: false });
  worker = new HealthWorker({ redisUrl: REDIS_URL, queue: queueName, keyPrefix, metrics });
  await worker.start();
  queue = new Queue(queueName, { connection: redisOptionsFromUrl(REDIS_URL) });
  // Interval 2 s, turn 3 s ago: the first probe is 3 s late, the second 1.5 s.
  await queue.add(
    'health-shard',
    shard(
      backends.map((b) => b.port),
      [0, 1500],
    ),
    { timestamp: Date.now() - 3000 },
  );
  await until('one check, one skip', async () => (await metrics.skipped.get()).values[0]?.value === 1, 5000);
  await until('second backend checked', () => backends[1]!.hits.length === 1, 5000);
  expect(backends[0]!.hits).toHaveLength(0);
});
