import { createHash } from 'node:crypto';
import type { HealthProbe, HealthShardJob } from '@slb/model';

/** Shards per interval when the scheduler is not told otherwise. */
export const HEALTH_SHARDS_DEFAULT = 64;

/** One BullMQ job scheduler: repeat every `every` ms at `offset` in the interval, carrying `job`. */
export interface ShardSchedule {
  id: string;
  every: number;
  /** When in the interval the job comes, ms: {@link jobLeadMs} before its slice; `every` stands for 0. */
  offset: number;
  job: HealthShardJob;
}

/**
 * Groups probes into shards, one BullMQ job scheduler each: a shard is an interval and one of `shards` equal
 * slices of it. A probe falls in the slice holding its {@link slotOffset}, a hash of its key, so the split
 * is deterministic (another API instance, or the next sync, gets the same one) and adding a probe changes one
 * shard only. The shard's job comes shortly before its slice and runs each probe at its own slot, so checks
 * stay spread over the interval as evenly as with one job per probe, and a job lasts its lead, one slice and
 * the probes' time: a change or a dead worker affects at most that much of one turn.
 */
export function planShards(probes: Iterable<HealthProbe>, shards: number): Map<string, ShardSchedule> {
  if (!Number.isInteger(shards) || shards < 1 || shards > 1000) {
    throw new RangeError(`shards must be an integer in 1–1000, got ${shards}`);
  }
  const plan = new Map<string, ShardSchedule>();
  for (const probe of probes) {
    const interval = probe.settings.interval;
    const every = interval * 1000;
    const slot = slotOffset(probe.key, every);
    const index = Math.floor((slot * shards) / every);
    const start = Math.ceil((index * every) / shards);
    const lead = jobLeadMs(every, shards);
    const id = `shard:${interval}s:${index}/${shards}`;
    let shard = plan.get(id);
    if (!shard) {
      shard = { id, every, offset: bullOffset(start - lead, every), job: { shard: id, interval, probes: [] } };
      plan.set(id, shard);
    }
    shard.job.probes.push({ ...probe, offsetMs: lead + slot - start });
  }
  // Sorted, so the same probes always make the same payload and an unchanged shard is not rewritten.
  for (const shard of plan.values()) shard.job.probes.sort((a, b) => a.offsetMs - b.offsetMs || cmp(a.key, b.key));
  return plan;
}

/**
 * Where in the interval this probe's checks fall: a hash of its key, so 10,000 targets added at once are
 * spread evenly over the interval instead of all falling due in the same millisecond (a burst the fleet
 * would serve late, and a herd against backends shared by several keys). Stable across syncs and API
 * instances.
 */
export function slotOffset(key: string, every: number): number {
  return createHash('sha1').update(key).digest().readUInt32BE(0) % every;
}

/**
 * How long before its first probe a shard job falls due: the time BullMQ takes to promote and hand out a
 * delayed job (hundreds of ms on a busy host, measured) is then spent before the probes' due times, not
 * added to them. A quarter of the interval at most, 500 ms at most, and never so much that a probe's
 * offset would reach the next turn.
 */
export function jobLeadMs(every: number, shards: number): number {
  return Math.max(0, Math.min(500, Math.floor(every / 4), every - Math.ceil(every / shards)));
}

/**
 * The offset in [1, every]: BullMQ reads an offset of 0 as "no offset" and then starts the schedule at the
 * moment of the upsert, not at a multiple of `every`; an offset of one whole interval lands on the same slots.
 */
function bullOffset(offset: number, every: number): number {
  const inInterval = ((offset % every) + every) % every;
  return inInterval === 0 ? every : inInterval;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
