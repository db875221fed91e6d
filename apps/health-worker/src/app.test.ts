import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterEach, expect, it } from 'vitest';
import { HealthWorker } from './app.js';
import { WorkerMetrics } from './metrics.js';
import { redisOptionsFromUrl } from './redis-options.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const queueName = `test-${randomUUID()}`;
let queue: Queue | undefined;
let worker: HealthWorker | undefined;
afterEach(async () => {
  await worker?.close();
  await queue?.obliterate({ force: true });
  await queue?.close();
});

it('drops and counts jobs that are not in the catalog or whose payload is invalid', async () => {
  const metrics = new WorkerMetrics({ defaultMetrics: false });
  worker = new HealthWorker({ redisUrl: REDIS_URL, queue: queueName, keyPrefix: `test-${randomUUID()}`, metrics });
  await worker.start();
  queue = new Queue(queueName, { connection: redisOptionsFromUrl(REDIS_URL) });
  await queue.add('health-check', { key: 'k', address: '127.0.0.1' });
  await queue.add('reboot-everything', {});
  const deadline = Date.now() + 5000;
  while ((await metrics.invalidJobs.get()).values[0]?.value !== 2 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  expect((await metrics.invalidJobs.get()).values[0]?.value).toBe(2);
  expect((await metrics.checks.get()).values).toHaveLength(0);
});
