import {
  type CheckOutcome,
  type HealthState,
  type HealthThresholds,
  type HealthTransition,
  initialHealthState,
  parseHealthState,
  recordResult,
} from '@slb/health';
import {
  HEALTH_TRANSITION_FIELD,
  type HealthTransitionMessage,
  healthStateKey,
  healthTransitionsStream,
} from '@slb/model';
import type { Redis, Result } from 'ioredis';

/**
 * Compare-and-set: writes the new state only if the key still holds what the caller read, and appends the
 * message to the stream in the same atomic step, so a state change and its report are never split.
 * The state machine stays in TypeScript (packages/health); Redis only arbitrates. WATCH/MULTI would do the
 * same but needs a connection per in-flight check, and a worker runs hundreds at once.
 */
const CAS_SCRIPT = `
local current = redis.call('GET', KEYS[1])
if (current or '') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
if ARGV[4] ~= '' then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*', '${HEALTH_TRANSITION_FIELD}', ARGV[4])
end
return 1
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    slbHealthCas(
      stateKey: string,
      streamKey: string,
      expected: string,
      next: string,
      ttlMs: number,
      message: string,
      maxLen: number,
    ): Result<number, Context>;
  }
}

/** What is stored per target: the state machine's state and whether the control plane has heard of it. */
interface StoredTarget {
  v: 1;
  state: HealthState;
  /** A report (transition or first verdict) was sent; until then a failing new target is reported once. */
  reported: boolean;
}

export interface TargetStoreOptions {
  /** Key prefix, e.g. `slb:health`. */
  prefix: string;
  /** Approximate cap of the transition stream. Default: 100,000. */
  streamMaxLen?: number;
  /**
   * Idle lifetime of a target's state. A target not checked for this long (deleted, or its listener stopped)
   * is forgotten and starts again from the initial state. Default: 24 h.
   */
  stateTtlMs?: number;
  /**
   * A check that changes nothing but the time of the last check is not written, except when the stored
   * state is this old: the write refreshes the idle lifetime, so it must stay well below `stateTtlMs`.
   * Default: 60,000 (60 s).
   */
  refreshMs?: number;
  /** Attempts when another worker wrote the same target in between. Default: 16. */
  maxAttempts?: number;
}

export interface RecordOutcome {
  transition: HealthTransition | null;
  /** The message appended to the stream, if any. */
  message: HealthTransitionMessage | null;
  /** Compare-and-set retries this update needed. */
  conflicts: number;
  /** The check changed nothing worth a write (see {@link TargetStoreOptions.refreshMs}). */
  unchanged: boolean;
}

/** Per-target threshold state in Redis, shared by the whole fleet. */
export class TargetStateStore {
  private readonly stream: string;
  private readonly maxLen: number;
  private readonly ttlMs: number;
  private readonly refreshMs: number;
  private readonly maxAttempts: number;
  /** Per-target queue of this process's writes: conflicts are then only between processes, and rare. */
  private readonly inFlight = new Map<string, Promise<unknown>>();

  constructor(
    private readonly redis: Redis,
    private readonly options: TargetStoreOptions,
  ) {
    this.stream = healthTransitionsStream(options.prefix);
    this.maxLen = options.streamMaxLen ?? 100_000;
    this.ttlMs = options.stateTtlMs ?? 24 * 3600 * 1000;
    this.refreshMs = options.refreshMs ?? 60_000;
    if (!(this.refreshMs >= 0 && this.refreshMs < this.ttlMs)) {
      throw new RangeError(`refreshMs (${this.refreshMs}) must be below stateTtlMs (${this.ttlMs})`);
    }
    this.maxAttempts = options.maxAttempts ?? 16;
    if (typeof (redis as { slbHealthCas?: unknown }).slbHealthCas !== 'function')
      redis.defineCommand('slbHealthCas', { numberOfKeys: 2, lua: CAS_SCRIPT });
  }

  async read(listenerId: string, serverId: string): Promise<HealthState | null> {
    const raw = await this.redis.get(healthStateKey(this.options.prefix, listenerId, serverId));
    return raw === null ? null : (decode(raw)?.state ?? null);
  }

  /** Feeds one check result into a target's state; emits a message on a transition. */
  record(
    listenerId: string,
    serverId: string,
    outcome: CheckOutcome,
    at: number,
    thresholds: HealthThresholds,
  ): Promise<RecordOutcome> {
    const key = healthStateKey(this.options.prefix, listenerId, serverId);
    const previous = this.inFlight.get(key) ?? Promise.resolve();
    const next = previous
      .catch(() => undefined)
      .then(() => this.write(key, listenerId, serverId, outcome, at, thresholds));
    this.inFlight.set(key, next);
    void next.then(
      () => this.inFlight.get(key) === next && this.inFlight.delete(key),
      () => this.inFlight.get(key) === next && this.inFlight.delete(key),
    );
    return next;
  }

  private async write(
    key: string,
    listenerId: string,
    serverId: string,
    outcome: CheckOutcome,
    at: number,
    thresholds: HealthThresholds,
  ): Promise<RecordOutcome> {
    for (let attempt = 0; attempt < this.maxAttempts; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, Math.random() * 2 * attempt));
      const raw = await this.redis.get(key);
      const stored = (raw === null ? null : decode(raw)) ?? { v: 1, state: initialHealthState(at), reported: false };
      const { state, transition } = recordResult(stored.state, outcome, at, thresholds);
      const message = reportFor(listenerId, serverId, stored, state, transition, thresholds);
      const next: StoredTarget = {
        v: 1,
        state: capRun(state, thresholds),
        reported: stored.reported || message !== null,
      };
      // Read-only when nothing changes: most checks of a fleet find the target as it was.
      if (raw !== null && message === null && this.sameAsStored(stored, next)) {
        return { transition, message, conflicts: attempt, unchanged: true };
      }
      const written = await this.redis.slbHealthCas(
        key,
        this.stream,
        raw ?? '',
        JSON.stringify(next),
        this.ttlMs,
        message ? JSON.stringify(message) : '',
        this.maxLen,
      );
      if (written === 1) return { transition, message, conflicts: attempt, unchanged: false };
    }
    throw new Error(`health state of ${listenerId}/${serverId}: ${this.maxAttempts} write conflicts in a row`);
  }

  /** Equal but for the time of the last check, and that one recent enough to leave the TTL meaningful. */
  private sameAsStored(stored: StoredTarget, next: StoredTarget): boolean {
    const a = stored.state;
    const b = next.state;
    return (
      stored.reported === next.reported &&
      a.status === b.status &&
      a.since === b.since &&
      a.consecutiveSuccesses === b.consecutiveSuccesses &&
      a.consecutiveFailures === b.consecutiveFailures &&
      a.lastError === b.lastError &&
      a.lastCheckedAt !== null &&
      b.lastCheckedAt !== null &&
      b.lastCheckedAt - a.lastCheckedAt < this.refreshMs
    );
  }
}

/**
 * The run that confirms the current status (successes while normal, failures while abnormal) decides nothing
 * once it has reached its threshold: only a run of the other kind can flip the status, and it resets this
 * one. So it is stored capped there, and a target that keeps answering as it did stops changing in Redis.
 */
function capRun(state: HealthState, thresholds: HealthThresholds): HealthState {
  if (state.status === 'normal' && state.consecutiveSuccesses > thresholds.healthyThreshold) {
    return { ...state, consecutiveSuccesses: thresholds.healthyThreshold };
  }
  if (state.status === 'abnormal' && state.consecutiveFailures > thresholds.unhealthyThreshold) {
    return { ...state, consecutiveFailures: thresholds.unhealthyThreshold };
  }
  return state;
}

/**
 * A transition is always reported. A target that was never reported and has failed `unhealthyThreshold`
 * times is reported once as abnormal: it starts abnormal (packages/health state.ts), so it has no transition
 * to report, yet the operator must see `abnormal`, not `unavailable`, for a server that never answered.
 */
function reportFor(
  listenerId: string,
  serverId: string,
  before: StoredTarget,
  after: HealthState,
  transition: HealthTransition | null,
  thresholds: HealthThresholds,
): HealthTransitionMessage | null {
  if (transition) {
    return {
      listenerId,
      serverId,
      status: transition.to,
      since: new Date(transition.at).toISOString(),
      lastError: transition.lastError,
    };
  }
  if (!before.reported && after.status === 'abnormal' && after.consecutiveFailures >= thresholds.unhealthyThreshold) {
    return {
      listenerId,
      serverId,
      status: 'abnormal',
      since: new Date(after.since).toISOString(),
      lastError: after.lastError,
    };
  }
  return null;
}

function decode(raw: string): StoredTarget | null {
  try {
    const value = JSON.parse(raw) as { v?: unknown; state?: unknown; reported?: unknown };
    const state = value.v === 1 ? parseHealthState(value.state) : null;
    return state ? { v: 1, state, reported: value.reported === true } : null;
  } catch {
    return null;
  }
}
