import { type Job, JobScheduler } from 'bullmq';

/**
 * The slot a job scheduler's job was made for, read from its id. BullMQ names those jobs
 * `repeat:<scheduler id>:<millis of the slot>` (its private JobScheduler.getSchedulerNextJobId and the
 * addJobScheduler Lua script build it alike), which stays right however late the job was promoted. That is
 * not a documented API, so the format is checked at import: a BullMQ that changed it stops the worker at
 * start with this module named, instead of every queue-lag figure quietly going wrong, and
 * `scheduler-job-id.test.ts` checks it against the ids a real scheduler makes in Redis.
 */

const SCHEDULER_JOB_ID = /^repeat:.+:(\d+)$/;

/** The slot's time in ms, or undefined for a job no scheduler made (or an id of another format). */
export function schedulerSlot(job: Pick<Job, 'id' | 'repeatJobKey'>): number | undefined {
  if (!job.repeatJobKey) return undefined;
  const m = SCHEDULER_JOB_ID.exec(job.id ?? '');
  return m ? Number(m[1]) : undefined;
}

type MakeId = (opts: { jobSchedulerId: string; nextMillis: number }) => string;

/** BullMQ's own id maker (a private method that uses no instance state). */
function bullmqIdMaker(): MakeId | undefined {
  const make = (JobScheduler.prototype as unknown as { getSchedulerNextJobId?: MakeId }).getSchedulerNextJobId;
  return typeof make === 'function' ? (opts) => make.call(undefined, opts) : undefined;
}

/** Throws, naming what changed, unless `make` builds ids that {@link schedulerSlot} reads back. */
export function checkSchedulerJobIds(make: MakeId | null | undefined = bullmqIdMaker()): void {
  const changed = (what: string) =>
    new Error(`BullMQ changed how it names a job scheduler's jobs (the health worker reads their slot): ${what}`);
  if (typeof make !== 'function') throw changed('JobScheduler has no getSchedulerNextJobId');
  const nextMillis = 1_764_547_200_000;
  const id = make({ jobSchedulerId: 'slb:check', nextMillis });
  if (schedulerSlot({ id, repeatJobKey: 'slb:check' }) !== nextMillis) {
    throw changed(`the job for slot ${nextMillis} is now named "${id}"`);
  }
}

checkSchedulerJobIds();
