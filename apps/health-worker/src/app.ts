import { setMaxListeners } from 'node:events';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { type HealthCheckSettings, probe } from '@slb/health';
import {
  checkBackend,
  type DenyRule,
  HEALTH_JOBS,
  type HealthJobName,
  type HealthShardJob,
  type HealthShardProbe,
  type HealthTransitionMessage,
  parseDenyRule,
  redisOptionsFromUrl,
} from '@slb/model';
import { type Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { Limiter } from './limiter.js';
import { BACKEND_DENIED_ERROR, failureReason, WorkerMetrics } from './metrics.js';
import { schedulerSlot } from './scheduler-job-id.js';
import { runShard, type ShardRun } from './shard-run.js';
import { TargetStateStore } from './state-store.js';

// The model's schema and the health package's type describe the same JSON; this fails to compile if they drift.
const settingsFit: (s: HealthShardProbe['settings']) => HealthCheckSettings = (s) => s;

/**
 * Shard jobs a process holds at once. A job is cheap (a list and one timer) and lasts a slice of its
 * interval plus its slowest probe, so this is far above what a fleet needs; sockets are bounded by
 * `concurrency` instead.
 */
const SHARD_JOBS_AT_ONCE = 1000;

/**
 * The catalog's payload schemas, compiled once: every turn of every shard is checked (dozens of payloads of
 * ~100 KB per second), and the interpreted Value.Check was 3 % of a saturated worker's CPU (profiled).
 */
const payloadChecks = new Map(
  Object.entries(HEALTH_JOBS).map(([name, spec]) => [name, TypeCompiler.Compile(spec.payload)] as const),
);

export interface HealthWorkerOptions {
  /** Redis of the queue, the target states and the transition stream. */
  redisUrl: string;
  /** BullMQ queue name: the deployment's, from its API or SLB_HEALTH_QUEUE (see namespace-source.ts). */
  queue: string;
  /** Prefix of target-state keys and the transition stream: the deployment's, as the queue. */
  keyPrefix: string;
  /** Probes in flight at once, over every shard job the process holds. Default: 200. */
  concurrency?: number;
  /** Default: a silent logger. */
  logger?: Logger;
  /** Default: a fresh registry with Node's default metrics. */
  metrics?: WorkerMetrics;
  /**
   * Targets never probed (reported failed instead): deny entries (`ADDRESS`, `CIDR`, `ADDRESS:PORT`,
   * `[IPv6]:PORT`) for the cloud's own endpoints, besides the special address classes that are always
   * refused. Default: none but those classes.
   */
  backendDeny?: readonly string[];
  /** Called after each check is recorded (tests, diagnostics). Default: none. */
  onCheck?: (report: CheckReport) => void;
}

/** Deny entries as the operator wrote them, parsed; one that parses as nothing is dropped (config.ts checks them). */
function denyRules(entries: readonly string[]): DenyRule[] {
  return entries.map(parseDenyRule).filter((rule): rule is DenyRule => rule !== null);
}

/** Result of one probe, for tests and logs. */
export interface CheckReport {
  key: string;
  ok: boolean;
  error?: string;
  /** Status reports sent to the control plane by this check. */
  messages: HealthTransitionMessage[];
}

/**
 * One health-check worker: takes `health-shard` jobs from the queue, runs each probe of the shard once at its
 * own due time and feeds the result to every target that shares the probe. Start as many as needed; BullMQ
 * hands each job, so each shard's turn of an interval, to exactly one.
 */
export class HealthWorker {
  readonly metrics: WorkerMetrics;
  private readonly redis: Redis;
  private readonly store: TargetStateStore;
  private readonly worker: Worker;
  private readonly shutdown = new AbortController();
  private readonly limiter: Limiter;
  private readonly log: Logger | undefined;
  private readonly onCheck: ((report: CheckReport) => void) | undefined;
  /** The deny entries, parsed once: each probe is checked against them (the model's checkBackend). */
  private deny: readonly DenyRule[];

  constructor(options: HealthWorkerOptions) {
    this.metrics = options.metrics ?? new WorkerMetrics();
    this.deny = denyRules(options.backendDeny ?? []);
    this.log = options.logger;
    this.onCheck = options.onCheck;
    this.limiter = new Limiter(options.concurrency ?? 200);
    // Every probe in flight listens for shutdown; hundreds at once are expected, not a leak.
    setMaxListeners(0, this.shutdown.signal);
    // No enableAutoPipelining: results come back one probe at a time, so its batches are tiny, and measured at
    // 5,000 state updates/s it cost the worker 15-35 % more CPU for under 15 % less on Redis.
    this.redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 3 });
    this.redis.on('error', (err) => this.log?.warn({ err: err.message }, 'redis error'));
    this.store = new TargetStateStore(this.redis, { prefix: options.keyPrefix });
    this.worker = new Worker(options.queue, (job) => this.process(job), {
      connection: redisOptionsFromUrl(options.redisUrl),
      concurrency: SHARD_JOBS_AT_ONCE,
      autorun: false,
      // A shard job whose worker died is not re-run: the scheduler already queued its next turn, which
      // whoever is alive takes, and a re-run would check its targets twice in one interval. A live worker
      // keeps the lock of a long job (a probe with a long timeout) renewed every lockDuration / 2.
      maxStalledCount: 0,
    });
    this.worker.on('error', (err) => this.log?.warn({ err: err.message }, 'worker error'));
    this.worker.on('failed', (job, err) => this.log?.warn({ key: job?.id, err: err.message }, 'shard job failed'));
  }

  /** Resolves once connected; jobs are then taken in the background. */
  async start(): Promise<void> {
    void this.worker.run().catch((err: unknown) => this.log?.error({ err: String(err) }, 'worker stopped'));
    await this.worker.waitUntilReady();
  }

  /** Adds deny entries known only once the process runs (its own metrics port). */
  addBackendDeny(entries: readonly string[]): void {
    this.deny = [...this.deny, ...denyRules(entries)];
  }

  /** Stops taking jobs, aborts probes in flight (their results are not recorded) and disconnects. */
  async close(): Promise<void> {
    this.shutdown.abort();
    await this.worker.close();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  private async process(job: Job): Promise<Omit<ShardRun, 'firstError'> | null> {
    const slot = dueTime(job);
    this.metrics.queueLag.observe(Math.max(0, Date.now() - slot) / 1000);
    const valid = payloadChecks.get(job.name as HealthJobName);
    if (valid === undefined || !valid.Check(job.data) || !consistent(job.data)) {
      this.metrics.invalidJobs.inc();
      this.log?.warn({ job: job.name, id: job.id }, 'invalid health-check job dropped');
      return null;
    }
    const run = await runShard(
      job.data.probes,
      slot,
      (p, due) => this.limiter.run(() => this.check(p, due)),
      this.shutdown.signal,
    );
    // One failure per job, not per probe: when Redis is gone, every probe of the shard fails the same way.
    if (run.failed > 0) throw new Error(`${run.failed} of ${run.started} checks not recorded: ${run.firstError}`);
    return { started: run.started, failed: run.failed };
  }

  private async check(payload: HealthShardProbe, due: number): Promise<CheckReport | null> {
    if (this.shutdown.signal.aborted) return null;
    const late = Date.now() - due;
    // A check a whole interval late is superseded by the target's next turn, already due. Running it anyway
    // would check the target twice in a row, and an overloaded worker's backlog (and memory) would only grow.
    if (late > payload.settings.interval * 1000) {
      this.metrics.skipped.inc();
      return null;
    }
    this.metrics.checkLateness.observe(Math.max(0, late) / 1000);
    const settings = settingsFit(payload.settings);
    // Defence in depth: the API refuses such servers, but a row from before the policy or a forged job must
    // not make this worker dial the cloud's own endpoints; the target is reported failed instead.
    const verdict = checkBackend(payload.address, settings.port, { deny: this.deny });
    const denied = verdict.allowed ? null : verdict.reason;
    if (denied !== null) this.metrics.backendDenied.inc({ reason: denied });
    const result =
      denied === null
        ? await probe(payload.address, settings, { signal: this.shutdown.signal })
        : { ok: false, latencyMs: 0, error: BACKEND_DENIED_ERROR };
    if (this.shutdown.signal.aborted) return null;
    const at = Date.now();
    this.metrics.checks.inc({ type: settings.type, result: result.ok ? 'ok' : 'fail' });
    this.metrics.probeDuration.observe({ type: settings.type }, result.latencyMs / 1000);
    if (!result.ok) this.metrics.failures.inc({ reason: failureReason(result.error) });
    const outcome = result.ok ? { ok: true } : { ok: false, error: result.error ?? 'failed' };
    const messages: HealthTransitionMessage[] = [];
    try {
      const recorded = await Promise.all(
        payload.targets.map((target) => this.store.record(target.listenerId, target.serverId, outcome, at, target)),
      );
      for (const r of recorded) {
        if (r.conflicts > 0) this.metrics.stateConflicts.inc(r.conflicts);
        if (r.message) {
          messages.push(r.message);
          this.metrics.transitions.inc({ status: r.message.status });
          // The probe's detailed reason stays here, in the operator's log: tenants see only a coarse one.
          this.log?.info({ ...r.message, address: payload.address, port: settings.port }, 'target status changed');
        }
      }
    } catch (err) {
      this.metrics.errors.inc();
      throw err;
    }
    const report = { key: payload.key, ok: result.ok, ...(result.error ? { error: result.error } : {}), messages };
    this.onCheck?.(report);
    return report;
  }
}

/** What the schema cannot say: every probe belongs to the shard's interval and falls inside it. */
function consistent(job: HealthShardJob): boolean {
  return job.probes.every((p) => p.settings.interval === job.interval && p.offsetMs < job.interval * 1000);
}

/**
 * When the shard's turn was due: a job scheduler's job carries its slot in its id. Other jobs are due at
 * creation plus their delay, read from the options because BullMQ zeroes `job.delay` once it promotes the job.
 */
function dueTime(job: Job): number {
  return schedulerSlot(job) ?? job.timestamp + (job.opts.delay ?? 0);
}
