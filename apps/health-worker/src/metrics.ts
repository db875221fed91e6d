import { promMetrics } from '@slb/metrics-kit';
import { collectDefaultMetrics, Registry } from 'prom-client';

const PROBE_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const QUEUE_LAG_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30];
const LATENESS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30];

/** The worker's Prometheus metrics, on a registry of its own (tests build several workers in one process). */
export class WorkerMetrics {
  readonly registry = new Registry();
  private readonly prom = promMetrics(this.registry);

  /** Probes run, by type and verdict; `rate()` of it is checks per second. */
  readonly checks = this.prom.counter('slb_health_checks_total', 'Health probes run, by check type and result', [
    'type',
    'result',
  ]);

  readonly probeDuration = this.prom.histogram(
    'slb_health_probe_duration_seconds',
    'Time from the start of a probe to its verdict',
    ['type'],
    PROBE_BUCKETS,
  );

  readonly failures = this.prom.counter(
    'slb_health_check_failures_total',
    'Failed probes by reason (errno code, timeout, http_status, udp, other)',
    ['reason'],
  );

  readonly backendDenied = this.prom.counter(
    'slb_health_backend_denied_total',
    'Checks not run because the target is a cloud endpoint or a special address (reported failed)',
    ['reason'],
  );
  readonly transitions = this.prom.counter(
    'slb_health_transitions_total',
    'Target status reports sent to the control plane, by new status',
    ['status'],
  );

  /** How late a shard job was taken against its slot: BullMQ and Redis delay, before any probe runs. */
  readonly queueLag = this.prom.histogram(
    'slb_health_queue_lag_seconds',
    'Start of a shard job minus its slot time',
    [],
    QUEUE_LAG_BUCKETS,
  );

  /** How late a check started against its own due time: the fleet is short of capacity when this grows. */
  readonly checkLateness = this.prom.histogram(
    'slb_health_check_lateness_seconds',
    'Start of a probe minus its due time (shard slot plus the probe offset)',
    [],
    LATENESS_BUCKETS,
  );

  /** Checks given up because their turn had passed: the fleet is short of capacity when this moves. */
  readonly skipped = this.prom.counter(
    'slb_health_checks_skipped_total',
    'Checks not run because they were due more than one interval ago (the next turn checks the target)',
  );

  readonly invalidJobs = this.prom.counter(
    'slb_health_invalid_jobs_total',
    'Jobs dropped because their name or payload did not match the job catalog',
  );

  readonly stateConflicts = this.prom.counter(
    'slb_health_state_conflicts_total',
    'Target state writes retried because another check wrote the same target in between',
  );

  readonly errors = this.prom.counter(
    'slb_health_job_errors_total',
    'Checks whose result could not be stored (Redis unreachable, persistent conflicts)',
  );

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }
}

/** A bounded label for a probe's error text: errno codes pass, free text is bucketed. */
/** The coarse reason a denied target reports: which rule matched is the operator's business, not the tenant's. */
export const BACKEND_DENIED_ERROR = 'address not allowed';

export function failureReason(error: string | undefined): string {
  if (error === undefined) return 'other';
  if (error.startsWith('timeout')) return 'timeout';
  if (error === BACKEND_DENIED_ERROR) return 'denied';
  if (/^E[A-Z0-9_]{2,30}$/.test(error)) return error;
  if (error.startsWith('status ')) return 'http_status';
  return 'other';
}
