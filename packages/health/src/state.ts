/**
 * The healthy/unhealthy threshold state machine, CLB semantics: a server turns `abnormal` after
 * `unhealthyThreshold` consecutive failed checks and `normal` after `healthyThreshold` consecutive
 * successes; anything shorter than a full run changes counters only. Pure: time comes in as an argument,
 * and the state is plain JSON (it is stored in Redis, one per (listener, server) target).
 *
 * Initial state: `abnormal`, with no check recorded. A server nobody has checked yet gets no new flows
 * until `healthyThreshold` checks pass (one `healthyThreshold × interval`, 6 s with the defaults). This is
 * what CLB shows for a freshly added backend and what AWS does with targets in `initial`, and it is the safe
 * side for the data plane: starting `normal` would send traffic to a server that may not even be listening
 * for `unhealthyThreshold × interval`, and connect-retry on the nodes cannot hide that from UDP clients or
 * from HTTP requests answered with a 5xx. The price, a short wait before a new server takes traffic, is paid
 * once per target, because the state survives worker restarts and settings changes (it is per target, not
 * per settings). If every server of a group is abnormal, whether to fail open is the forwarding node's call.
 */

export type HealthStatus = 'normal' | 'abnormal';

/** How many consecutive results flip the status. */
export interface HealthThresholds {
  /** Consecutive successes that turn an abnormal server normal. */
  healthyThreshold: number;
  /** Consecutive failures that turn a normal server abnormal. */
  unhealthyThreshold: number;
}

export interface HealthState {
  status: HealthStatus;
  /** When the status last changed (epoch ms); for a never-flipped target, when it was created. */
  since: number;
  /** Length of the current run of successes (0 after a failure). */
  consecutiveSuccesses: number;
  /** Length of the current run of failures (0 after a success). */
  consecutiveFailures: number;
  /** Reason of the most recent failed check; cleared when the server turns normal. */
  lastError: string | null;
  /** When the last result was recorded (epoch ms); null before the first check. */
  lastCheckedAt: number | null;
}

/** A status change, to be stored and pushed to the nodes. */
export interface HealthTransition {
  from: HealthStatus;
  to: HealthStatus;
  /** Epoch ms, equal to the new state's `since`. */
  at: number;
  /** For `to: 'abnormal'`, the failure that tipped it; for `to: 'normal'`, the last failure before recovery. */
  lastError: string | null;
}

/** The part of a probe result the state machine needs. */
export interface CheckOutcome {
  ok: boolean;
  error?: string;
}

export function initialHealthState(now: number): HealthState {
  return {
    status: 'abnormal',
    since: now,
    consecutiveSuccesses: 0,
    consecutiveFailures: 0,
    lastError: null,
    lastCheckedAt: null,
  };
}

/**
 * Records one check result. Thresholds are compared with `>=`, so lowering a threshold while a run is
 * under way takes effect on the next result; raising it simply needs a longer run. Counters keep counting
 * past the threshold (they saturate at a large bound only so that a stored state stays small).
 */
export function recordResult(
  state: HealthState,
  outcome: CheckOutcome,
  at: number,
  thresholds: HealthThresholds,
): { state: HealthState; transition: HealthTransition | null } {
  if (outcome.ok) {
    const consecutiveSuccesses = Math.min(state.consecutiveSuccesses + 1, COUNTER_LIMIT);
    const flips = state.status === 'abnormal' && consecutiveSuccesses >= thresholds.healthyThreshold;
    const next: HealthState = {
      status: flips ? 'normal' : state.status,
      since: flips ? at : state.since,
      consecutiveSuccesses,
      consecutiveFailures: 0,
      lastError: flips ? null : state.lastError,
      lastCheckedAt: at,
    };
    const transition = flips ? { from: state.status, to: next.status, at, lastError: state.lastError } : null;
    return { state: next, transition };
  }
  const lastError = outcome.error ?? 'failed';
  const consecutiveFailures = Math.min(state.consecutiveFailures + 1, COUNTER_LIMIT);
  const flips = state.status === 'normal' && consecutiveFailures >= thresholds.unhealthyThreshold;
  const next: HealthState = {
    status: flips ? 'abnormal' : state.status,
    since: flips ? at : state.since,
    consecutiveSuccesses: 0,
    consecutiveFailures,
    lastError,
    lastCheckedAt: at,
  };
  const transition = flips ? { from: state.status, to: next.status, at, lastError } : null;
  return { state: next, transition };
}

/** Far above any threshold (max 10); keeps stored counters bounded. */
const COUNTER_LIMIT = 1_000_000;

/**
 * Reads a state back from storage (the result of `JSON.parse`). Returns null for anything that is not a
 * well-formed state, so a corrupt or foreign value is replaced rather than trusted.
 */
export function parseHealthState(value: unknown): HealthState | null {
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Record<string, unknown>;
  const isCount = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 0;
  const isTime = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n);
  if (v.status !== 'normal' && v.status !== 'abnormal') return null;
  if (!isTime(v.since) || !isCount(v.consecutiveSuccesses) || !isCount(v.consecutiveFailures)) return null;
  if (v.consecutiveSuccesses > 0 && v.consecutiveFailures > 0) return null;
  if (v.lastError !== null && typeof v.lastError !== 'string') return null;
  if (v.lastCheckedAt !== null && !isTime(v.lastCheckedAt)) return null;
  return {
    status: v.status,
    since: v.since,
    consecutiveSuccesses: v.consecutiveSuccesses,
    consecutiveFailures: v.consecutiveFailures,
    lastError: v.lastError,
    lastCheckedAt: v.lastCheckedAt,
  };
}
