import { setMaxListeners } from 'node:events';
import { Value } from '@sinclair/typebox/value';
import { type HealthCheckSettings, probe } from '@slb/health';
import { HEALTH_JOBS, type HealthCheckJob, type HealthJobName, type HealthTransitionMessage } from '@slb/model';
import { type Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { failureReason, WorkerMetrics } from './metrics.js';
import { redisOptionsFromUrl } from './redis-options.js';
import { TargetStateStore } from './state-store.js';

// The model's schema and the health package's type describe the same JSON; this fails to compile if they drift.
const settingsFit: (s: HealthCheckJob['settings']) => HealthCheckSettings = (s) => s;

export interface HealthWorkerOptions {
  /** Redis of the queue, the target states and the transition stream. */
  redisUrl: string;
  /** BullMQ queue name. Default: `slb-health`. */
  queue: string;
  /** Prefix of target-state keys and the transition stream. Default: `slb:health`. */
  keyPrefix: string;
  /** Checks in flight at once. Default: 200. */
  concurrency?: number;
  /** Default: a silent logger. */
  logger?: Logger;
  /** Default: a fresh registry with Node's default metrics. */
  metrics?: WorkerMetrics;
  /** Called after each check is recorded (tests, diagnostics). Default: none. */
  onCheck?: (report: CheckReport) => void;
}

/** Result of one job, for tests and logs. */
export interface CheckReport {
  key: string;
  ok: boolean;
  error?: string;
  /** Status reports sent to the control plane by this check. */
  messages: HealthTransitionMessage[];
}

/**
 * One health-check worker: takes `health-check` jobs from the queue, probes once per job and feeds the result
 * to every target that shares the probe. Start as many as needed; BullMQ hands each job to exactly one.
 */
export class HealthWorker {
  readonly metrics: WorkerMetrics;
  private readonly redis: Redis;
  private readonly store: TargetStateStore;
  private readonly worker: Worker;
  private readonly shutdown = new AbortController();
  private readonly log: Logger | undefined;
  private readonly onCheck: ((report: CheckReport) => void) | undefined;

  constructor(options: HealthWorkerOptions) {
    this.metrics = options.metrics ?? new WorkerMetrics();
    this.log = options.logger;
    this.onCheck = options.onCheck;
    // Every probe in flight listens for shutdown; hundreds at once are expected, not a leak.
    setMaxListeners(0, this.shutdown.signal);
    this.redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 3 });
    this.redis.on('error', (err) => this.log?.warn({ err: err.message }, 'redis error'));
    this.store = new TargetStateStore(this.redis, { prefix: options.keyPrefix });
    this.worker = new Worker(options.queue, (job) => this.process(job), {
      connection: redisOptionsFromUrl(options.redisUrl),
      concurrency: options.concurrency ?? 200,
      autorun: false,
      // A check whose worker died is not re-run: the scheduler already queued the next one, and a re-run
      // would check the target twice in one interval.
      maxStalledCount: 0,
    });
    this.worker.on('error', (err) => this.log?.warn({ err: err.message }, 'worker error'));
    this.worker.on('failed', (job, err) => this.log?.warn({ key: job?.id, err: err.message }, 'check failed'));
  }

  /** Resolves once connected; jobs are then taken in the background. */
  async start(): Promise<void> {
    void this.worker.run().catch((err: unknown) => this.log?.error({ err: String(err) }, 'worker stopped'));
    await this.worker.waitUntilReady();
  }

  /** Stops taking jobs, aborts probes in flight (their results are not recorded) and disconnects. */
  async close(): Promise<void> {
    this.shutdown.abort();
    await this.worker.close();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  private async process(job: Job): Promise<CheckReport | null> {
    const started = Date.now();
    const due = dueTime(job);
    this.metrics.queueLag.observe(Math.max(0, started - due) / 1000);
    const spec = HEALTH_JOBS[job.name as HealthJobName];
    if (spec === undefined || !Value.Check(spec.payload, job.data)) {
      this.metrics.invalidJobs.inc();
      this.log?.warn({ job: job.name, id: job.id }, 'invalid health-check job dropped');
      return null;
    }
    return this.check(job.data);
  }

  private async check(payload: HealthCheckJob): Promise<CheckReport | null> {
    const settings = settingsFit(payload.settings);
    const result = await probe(payload.address, settings, { signal: this.shutdown.signal });
    if (this.shutdown.signal.aborted) return null;
    const at = Date.now();
    this.metrics.checks.inc({ type: settings.type, result: result.ok ? 'ok' : 'fail' });
    this.metrics.probeDuration.observe({ type: settings.type }, result.latencyMs / 1000);
    if (!result.ok) this.metrics.failures.inc({ reason: failureReason(result.error) });
    const messages: HealthTransitionMessage[] = [];
    try {
      for (const target of payload.targets) {
        const outcome = result.ok ? { ok: true } : { ok: false, error: result.error ?? 'failed' };
        const recorded = await this.store.record(target.listenerId, target.serverId, outcome, at, target);
        if (recorded.conflicts > 0) this.metrics.stateConflicts.inc(recorded.conflicts);
        if (recorded.message) {
          messages.push(recorded.message);
          this.metrics.transitions.inc({ status: recorded.message.status });
          this.log?.info(recorded.message, 'target status changed');
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

/**
 * When the check was due: a job scheduler's job id ends with its slot (`repeat:<key>:<millis>`), which stays
 * right however late the job was promoted; other jobs are due at creation plus delay.
 */
function dueTime(job: Job): number {
  const slot = job.repeatJobKey ? /:(\d+)$/.exec(job.id ?? '') : null;
  return slot ? Number(slot[1]) : job.timestamp + (job.delay ?? 0);
}
