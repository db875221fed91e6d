import { randomUUID } from 'node:crypto';
import { cleanRedis, REDIS_URL, until } from '@slb/test-support/health-worker';
import { Queue } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { checkSchedulerJobIds, schedulerSlot } from '../src/scheduler-job-id.js';

// The health worker reads a shard's due time from the id BullMQ gives a job scheduler's job: checked here
// against the installed BullMQ, with a real scheduler in Redis, so an upgrade that renames them fails loudly.

let queue: Queue | undefined;
let name = '';
afterEach(async () => {
  await queue?.close();
  await cleanRedis(`test-${randomUUID()}`, name);
});

describe("a job scheduler's job id", () => {
  it('passes the start-up check on the installed BullMQ', () => {
    expect(() => checkSchedulerJobIds()).not.toThrow();
  });

  it('carries the slot the scheduler made the job for, in Redis', async () => {
    name = `test-${randomUUID()}`;
    queue = new Queue(name, { connection: { url: REDIS_URL } });
    const every = 60_000;
    const startDate = Math.ceil((Date.now() + 5_000) / every) * every;
    await queue.upsertJobScheduler('shard:10:3', { every, startDate }, { name: 'health-shard', data: {} });
    const job = await until('the scheduled job', async () => (await queue!.getJobs(['delayed', 'waiting']))[0]);
    expect(job.repeatJobKey).toBe('shard:10:3');
    const slot = schedulerSlot(job);
    expect(slot).toBeDefined();
    // What a delayed job is due at, until BullMQ promotes it (and zeroes its delay).
    expect(slot).toBe(job.timestamp + job.delay);
    expect(slot! % every).toBe(0);
  });

  it('is not read from a job no scheduler made', () => {
    expect(schedulerSlot({ id: 'repeat:x:123', repeatJobKey: undefined })).toBeUndefined();
  });
});

describe('a BullMQ that names them otherwise', () => {
  it.each([
    ['another format', () => 'sched-slb:check-1764547200000', /is now named "sched-slb:check-1764547200000"/],
    ['no id maker', null, /JobScheduler has no getSchedulerNextJobId/],
  ])('stops the worker at start: %s', (_what, make, message) => {
    expect(() => checkSchedulerJobIds(make)).toThrow(message);
  });
});
