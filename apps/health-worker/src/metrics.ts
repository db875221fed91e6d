import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

/** The worker's Prometheus metrics, on a registry of its own (tests build several workers in one process). */
export class WorkerMetrics {
  readonly registry = new Registry();

  /** Probes run, by type and verdict; `rate()` of it is checks per second. */
  readonly checks = new Counter({
    name: 'slb_health_checks_total',
    help: 'Health probes run, by check type and result',
    labelNames: ['type', 'result'] as const,
    registers: [this.registry],
  });

  readonly probeDuration = new Histogram({
    name: 'slb_health_probe_duration_seconds',
    help: 'Time from the start of a probe to its verdict',
    labelNames: ['type'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  readonly failures = new Counter({
    name: 'slb_health_check_failures_total',
    help: 'Failed probes by reason (errno code, timeout, http_status, udp, other)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly backendDenied = new Counter({
    name: 'slb_health_backend_denied_total',
    help: 'Checks not run because the target is a cloud endpoint or a special address (reported failed)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly transitions = new Counter({
    name: 'slb_health_transitions_total',
    help: 'Target status reports sent to the control plane, by new status',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  /** How late a shard job was taken against its slot: BullMQ and Redis delay, before any probe runs. */
  readonly queueLag = new Histogram({
    name: 'slb_health_queue_lag_seconds',
    help: 'Start of a shard job minus its slot time',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [this.registry],
  });

  /** How late a check started against its own due time: the fleet is short of capacity when this grows. */
  readonly checkLateness = new Histogram({
    name: 'slb_health_check_lateness_seconds',
    help: 'Start of a probe minus its due time (shard slot plus the probe offset)',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [this.registry],
  });

  /** Checks given up because their turn had passed: the fleet is short of capacity when this moves. */
  readonly skipped = new Counter({
    name: 'slb_health_checks_skipped_total',
    help: 'Checks not run because they were due more than one interval ago (the next turn checks the target)',
    registers: [this.registry],
  });

  readonly invalidJobs = new Counter({
    name: 'slb_health_invalid_jobs_total',
    help: 'Jobs dropped because their name or payload did not match the job catalog',
    registers: [this.registry],
  });

  readonly stateConflicts = new Counter({
    name: 'slb_health_state_conflicts_total',
    help: 'Target state writes retried because another check wrote the same target in between',
    registers: [this.registry],
  });

  readonly errors = new Counter({
    name: 'slb_health_job_errors_total',
    help: 'Checks whose result could not be stored (Redis unreachable, persistent conflicts)',
    registers: [this.registry],
  });

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
