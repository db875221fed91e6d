import { createHash } from 'node:crypto';
import type { Db } from '@slb/db';
import { HEALTH_JOBS, HEALTH_QUEUE_DEFAULT, type HealthCheckJob } from '@slb/model';
import { Queue } from 'bullmq';
import type { FastifyBaseLogger } from 'fastify';
import { redisOptionsFromUrl } from './redis-options.js';
import { planHealthChecks } from './targets.js';

const JOB_NAME = 'health-check' satisfies keyof typeof HEALTH_JOBS;

export interface HealthSchedulerOptions {
  db: Db;
  /** Redis of the BullMQ queue. */
  redisUrl: string;
  /** BullMQ queue name; the workers' `SLB_HEALTH_QUEUE`. Default: `slb-health`. */
  queue?: string;
  /** Quiet period of {@link HealthScheduler.requestSync}, ms. Default: 50. */
  debounceMs?: number;
  /** Longest a requested sync waits while writes keep coming, ms. Default: 1,000. */
  maxWaitMs?: number;
  /**
   * Period of a full sync that also repairs schedulers whose chain broke (a worker killed between taking a
   * check and queueing the next one), ms; 0 turns it off. Default: 30,000.
   */
  resyncIntervalMs?: number;
  /** Default: none. */
  logger?: FastifyBaseLogger;
}

export interface SyncResult {
  /** Job schedulers after the sync (one per probe key). */
  total: number;
  upserted: number;
  removed: number;
  /** Schedulers re-armed because their next check was overdue by more than two intervals. */
  repaired: number;
  /** Targets left out because their stored settings did not resolve. */
  skipped: number;
}

/**
 * Keeps the BullMQ job schedulers equal to the targets in the database: one scheduler per probe key,
 * repeating every `interval`, carrying the probe and its targets. Only changed schedulers are written, so a
 * sync does not move the schedule of unchanged checks; a changed one keeps its slot and its next check
 * uses the new payload (an `interval` change restarts its timing).
 */
export class HealthScheduler {
  readonly queue: Queue;
  private readonly db: Db;
  private readonly debounceMs: number;
  private readonly log: FastifyBaseLogger | undefined;
  private timer: NodeJS.Timeout | null = null;
  private readonly maxWaitMs: number;
  private firstRequestAt: number | null = null;
  /** The plan last written to Redis (key → payload); an unchanged plan needs no Redis round trip. */
  private lastPlan: Map<string, string> | null = null;
  private resync: NodeJS.Timeout | null = null;
  private running: Promise<SyncResult> | null = null;
  private pending: Promise<SyncResult> | null = null;
  private closed = false;

  constructor(options: HealthSchedulerOptions) {
    this.db = options.db;
    this.debounceMs = options.debounceMs ?? 50;
    this.maxWaitMs = options.maxWaitMs ?? 1000;
    this.log = options.logger;
    this.queue = new Queue(options.queue ?? HEALTH_QUEUE_DEFAULT, {
      connection: redisOptionsFromUrl(options.redisUrl),
    });
    this.queue.on('error', (err) => this.log?.warn({ err: err.message }, 'health queue error'));
    // The schedules live in Redis: after Redis comes back (possibly empty), put them back at once
    // instead of waiting for the periodic resync.
    this.queue.client
      .then((client) =>
        client.on('ready', () => {
          this.lastPlan = null;
          this.requestSync();
        }),
      )
      .catch(() => undefined);
    const every = options.resyncIntervalMs ?? 30_000;
    if (every > 0) {
      this.resync = setInterval(() => {
        this.lastPlan = null; // a full look at Redis, to repair broken schedules
        this.requestSync();
      }, every);
      this.resync.unref();
    }
  }

  /** Schedules a sync after `debounceMs` of quiet; call after every write that may change the targets. */
  requestSync(): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    const now = Date.now();
    this.firstRequestAt ??= now;
    // Debounced, but a steady stream of writes still gets a sync at least every maxWaitMs.
    const delay = Math.max(0, Math.min(this.debounceMs, this.firstRequestAt + this.maxWaitMs - now));
    this.timer = setTimeout(() => {
      this.timer = null;
      this.firstRequestAt = null;
      this.sync().catch((err: unknown) => this.log?.error({ err: String(err) }, 'health-check sync failed'));
    }, delay);
    this.timer.unref();
  }

  /** Makes the schedulers match the database now. Concurrent calls coalesce into one follow-up sync. */
  sync(): Promise<SyncResult> {
    if (!this.running) {
      this.running = this.syncOnce().finally(() => {
        this.running = null;
      });
      return this.running;
    }
    if (!this.pending) {
      this.pending = this.running
        .catch(() => undefined)
        .then(() => {
          this.pending = null;
          return this.sync();
        });
    }
    return this.pending;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.resync) clearInterval(this.resync);
    await Promise.allSettled([this.running, this.pending]);
    await this.queue.close();
  }

  private async syncOnce(): Promise<SyncResult> {
    const plan = planHealthChecks(this.db);
    const planned = new Map(
      [...plan.jobs].map(([key, job]) => [key, `${job.settings.interval}|${JSON.stringify(job)}`]),
    );
    if (this.lastPlan && samePlan(this.lastPlan, planned)) {
      // Most writes (a weight, a name) change no check: nothing to tell Redis.
      return { total: plan.jobs.size, upserted: 0, removed: 0, repaired: 0, skipped: plan.skipped.length };
    }
    for (const s of plan.skipped) this.log?.warn(s, 'health check left out: settings do not resolve');
    const existing = await this.queue.getJobSchedulers(0, -1, true);
    const now = Date.now();
    const current = new Map(existing.map((s) => [s.key, s]));
    let upserted = 0;
    let repaired = 0;
    const writes: Promise<unknown>[] = [];
    for (const [key, job] of plan.jobs) {
      const every = job.settings.interval * 1000;
      const have = current.get(key);
      const same = have !== undefined && Number(have.every) === every && sameData(have.template?.data, job);
      const overdue = same && typeof have.next === 'number' && have.next < now - 2 * every - 1000;
      if (same && !overdue) continue;
      if (overdue) repaired++;
      else upserted++;
      writes.push(this.upsert(key, every, job));
    }
    let removed = 0;
    for (const key of current.keys()) {
      if (plan.jobs.has(key)) continue;
      removed++;
      writes.push(this.queue.removeJobScheduler(key));
    }
    await Promise.all(writes);
    this.lastPlan = planned;
    const result = { total: plan.jobs.size, upserted, removed, repaired, skipped: plan.skipped.length };
    if (upserted + removed + repaired > 0) this.log?.info(result, 'health-check schedule synced');
    return result;
  }

  private upsert(key: string, every: number, job: HealthCheckJob) {
    return this.queue.upsertJobScheduler(
      key,
      { every, offset: slotOffset(key, every) },
      { name: JOB_NAME, data: job, opts: { ...HEALTH_JOBS[JOB_NAME].options } },
    );
  }
}

/**
 * Where in the interval this probe's checks fall: a hash of its key, so 10,000 targets added at once are
 * spread evenly over the interval instead of all falling due in the same millisecond (a burst the fleet
 * would serve late, and a herd against backends shared by several keys). Stable across syncs and API
 * instances. The first check of a new probe comes at its slot, at most one interval after the sync.
 */
export function slotOffset(key: string, every: number): number {
  return createHash('sha1').update(key).digest().readUInt32BE(0) % every;
}

function sameData(stored: unknown, job: HealthCheckJob): boolean {
  return JSON.stringify(stored) === JSON.stringify(job);
}

function samePlan(a: Map<string, string>, b: Map<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, value] of a) if (b.get(key) !== value) return false;
  return true;
}
