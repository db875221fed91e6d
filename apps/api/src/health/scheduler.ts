import type { Store } from '@slb/db';
import { HEALTH_JOBS, HEALTH_QUEUE_DEFAULT, redisOptionsFromUrl } from '@slb/model';
import { Queue } from 'bullmq';
import type { FastifyBaseLogger } from 'fastify';
import { HEALTH_SHARDS_DEFAULT, planShards, type ShardSchedule } from './shards.js';
import { planHealthChecks } from './targets.js';

const JOB_NAME = 'health-shard' satisfies keyof typeof HEALTH_JOBS;

export interface HealthSchedulerOptions {
  /** Where the listeners and servers to check are read from. */
  store: Store;
  /** Redis of the BullMQ queue. */
  redisUrl: string;
  /** BullMQ queue name; the workers' `SLB_HEALTH_QUEUE`. Default: `slb-health`. */
  queue?: string;
  /**
   * Slices of each interval; one job scheduler per non-empty slice. More shards spread the work over more,
   * smaller jobs; fewer put less on Redis. Changing it re-plans every shard. Default: 64.
   */
  shards?: number;
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
  /**
   * Syncs on its own (requested syncs, the periodic repair, after Redis comes back) from the start. False: only
   * once start() is called, as the API does under the cluster-duties lease. Default: true.
   */
  autoStart?: boolean;
}

export interface SyncResult {
  /** Job schedulers after the sync (one per non-empty shard). */
  total: number;
  /** Probes in those shards (one per probe key). */
  probes: number;
  upserted: number;
  removed: number;
  /** Schedulers re-armed because their next check was overdue by more than two intervals. */
  repaired: number;
  /** Targets left out because their stored settings did not resolve. */
  skipped: number;
}

/**
 * Keeps the BullMQ job schedulers equal to the targets in the database: the probes are grouped into shards
 * (shards.ts), one scheduler per non-empty shard, repeating every `interval` and carrying the shard's probes
 * and their targets. Only changed shards are written, so a sync does not move the schedule of unchanged
 * checks; a changed shard keeps its slot and its next job carries the new payload.
 */
export class HealthScheduler {
  readonly queue: Queue;
  private readonly store: Store;
  private readonly shards: number;
  private readonly debounceMs: number;
  private readonly log: FastifyBaseLogger | undefined;
  private timer: NodeJS.Timeout | null = null;
  private readonly maxWaitMs: number;
  private firstRequestAt: number | null = null;
  /** The plan last written to Redis (key → payload); an unchanged plan needs no Redis round trip. */
  private lastPlan: Map<string, string> | null = null;
  /** The plan last written in full; unlike lastPlan, kept across repair passes. */
  private written: Map<string, string> | null = null;
  /**
   * The plan as last computed from the database, kept until a write may have changed the targets: the
   * periodic repair only needs a fresh look at Redis, and planning reads every checked listener and
   * server (hundreds of ms of the API's event loop at 40,000 targets).
   */
  private computed: Awaited<ReturnType<HealthScheduler['plan']>> | null = null;
  private resync: NodeJS.Timeout | null = null;
  private readonly resyncEvery: number;
  /** Syncing on its own (see start()). */
  private active = false;
  private running: Promise<SyncResult> | null = null;
  private pending: Promise<SyncResult> | null = null;
  private closed = false;

  constructor(options: HealthSchedulerOptions) {
    this.store = options.store;
    this.shards = options.shards ?? HEALTH_SHARDS_DEFAULT;
    planShards([], this.shards); // a bad shard count fails here, not at the first sync
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
          this.written = null;
          this.schedule();
        }),
      )
      .catch(() => undefined);
    this.resyncEvery = options.resyncIntervalMs ?? 30_000;
    if (options.autoStart ?? true) this.activate(); // the owner requests the first sync
  }

  /**
   * Syncs on its own from now on: a sync at once, then requested ones and the periodic repair. What was last
   * written is forgotten: another API process may have written since (the lease moved here).
   */
  start(): void {
    if (this.active || this.closed) return;
    this.activate();
    this.requestSync();
  }

  private activate(): void {
    this.active = true;
    this.lastPlan = null;
    this.written = null;
    if (this.resyncEvery > 0) {
      this.resync = setInterval(() => {
        this.lastPlan = null; // a full look at Redis, to repair broken schedules
        this.schedule();
      }, this.resyncEvery);
      this.resync.unref();
    }
  }

  /**
   * Stops syncing (the lease moved away) and waits for a sync under way, which writes nothing more once it
   * sees this; until start(), sync() reads Redis but writes nothing.
   */
  async stop(): Promise<void> {
    this.active = false;
    if (this.timer) clearTimeout(this.timer);
    if (this.resync) clearInterval(this.resync);
    this.timer = null;
    this.resync = null;
    this.firstRequestAt = null;
    await Promise.allSettled([this.running, this.pending]);
  }

  /** Schedules a sync after `debounceMs` of quiet; call after every write that may change the targets. */
  requestSync(): void {
    this.computed = null;
    this.schedule();
  }

  private schedule(): void {
    if (this.closed || !this.active) return;
    if (this.timer) clearTimeout(this.timer);
    const now = Date.now();
    this.firstRequestAt ??= now;
    // Debounced, but a steady stream of writes still gets a sync at least every maxWaitMs.
    const delay = Math.max(0, Math.min(this.debounceMs, this.firstRequestAt + this.maxWaitMs - now));
    this.timer = setTimeout(() => {
      this.timer = null;
      this.firstRequestAt = null;
      this.run().catch((err: unknown) => this.log?.error({ err: String(err) }, 'health-check sync failed'));
    }, delay);
    this.timer.unref();
  }

  /** Makes the schedulers match the database now. Concurrent calls coalesce into one follow-up sync. */
  sync(): Promise<SyncResult> {
    this.computed = null;
    return this.run();
  }

  private run(): Promise<SyncResult> {
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
          return this.run();
        });
    }
    return this.pending;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.stop();
    await this.queue.close();
  }

  private async plan() {
    const plan = await planHealthChecks(this.store);
    const shards = planShards(plan.probes.values(), this.shards);
    const planned = new Map([...shards].map(([id, s]) => [id, `${s.every}|${s.offset}|${JSON.stringify(s.job)}`]));
    return { plan, shards, planned };
  }

  private async syncOnce(): Promise<SyncResult> {
    this.computed ??= await this.plan();
    const { plan, shards, planned } = this.computed;
    const counts = { total: shards.size, probes: plan.probes.size, skipped: plan.skipped.length };
    if (this.lastPlan && samePlan(this.lastPlan, planned)) {
      // Most writes (a weight, a name) change no check: nothing to tell Redis.
      return { ...counts, upserted: 0, removed: 0, repaired: 0 };
    }
    for (const s of plan.skipped) this.log?.warn(s, 'health check left out: settings do not resolve');
    const existing = await this.queue.getJobSchedulers(0, -1, true);
    // Stopped meanwhile (the lease moved away): the new holder writes its own plan, so ours, read before,
    // must not land after it. BullMQ's writes cannot be fenced in Redis; this narrows the window to one read.
    if (!this.active) return { ...counts, upserted: 0, removed: 0, repaired: 0 };
    const now = Date.now();
    const current = new Map(existing.map((s) => [s.key, s]));
    // A repair pass over a plan already written in full looks for lost or stuck schedules only: comparing
    // every shard's payload (tens of thousands of probes) would hold the event loop for nothing.
    const payloadsWritten = this.written !== null && samePlan(this.written, planned);
    let upserted = 0;
    let repaired = 0;
    const writes: Promise<unknown>[] = [];
    for (const [id, shard] of shards) {
      const every = shard.every;
      const have = current.get(id);
      // An upsert keeps the scheduler's slot, so a shard whose place in the interval moved is scheduled afresh.
      const moved = have !== undefined && Number(have.offset) !== shard.offset;
      const same =
        have !== undefined &&
        !moved &&
        Number(have.every) === every &&
        (payloadsWritten || sameData(have.template?.data, shard));
      const overdue = same && typeof have.next === 'number' && have.next < now - 2 * every - 1000;
      if (same && !overdue) continue;
      if (overdue) repaired++;
      else upserted++;
      writes.push(moved ? this.queue.removeJobScheduler(id).then(() => this.upsert(shard)) : this.upsert(shard));
    }
    let removed = 0;
    for (const id of current.keys()) {
      if (shards.has(id)) continue;
      removed++;
      writes.push(this.queue.removeJobScheduler(id));
    }
    await Promise.all(writes);
    this.lastPlan = planned;
    this.written = planned;
    const result = { ...counts, upserted, removed, repaired };
    if (upserted + removed + repaired > 0) this.log?.info(result, 'health-check schedule synced');
    return result;
  }

  private upsert(shard: ShardSchedule) {
    return this.queue.upsertJobScheduler(
      shard.id,
      { every: shard.every, offset: shard.offset },
      { name: JOB_NAME, data: shard.job, opts: { ...HEALTH_JOBS[JOB_NAME].options } },
    );
  }
}

function sameData(stored: unknown, shard: ShardSchedule): boolean {
  return JSON.stringify(stored) === JSON.stringify(shard.job);
}

function samePlan(a: Map<string, string>, b: Map<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, value] of a) if (b.get(key) !== value) return false;
  return true;
}
