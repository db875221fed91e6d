import { reconnectDelay } from './backoff.js';

// SLB_API_URL (splitApiUrls, apiUrlsProblem in @slb/model): one control plane base URL, or several replicas.

/** The control channel's WebSocket URL on a base URL. */
export function controlChannelUrl(base: string, path: string): string {
  return `${base.replace(/^http/, 'ws').replace(/\/$/, '')}${path}`;
}

/**
 * The longest wait between two rounds when there are several replicas, ms: one that comes back (or a second
 * one while the first is down) is found within the 3 s reconnect goal, and a dial of a dead replica is a
 * cheap refusal. With one URL the wait grows to the channel's cap (by default the same).
 */
export const SEVERAL_REPLICAS_CAP_MS = 1000;

/**
 * Which replica a node dials, and when. It stays on a replica while the connection holds. When a dial fails
 * or the connection ends it moves to the next URL (round robin): a dead replica costs one failed dial, as the
 * next one is dialed at once; only when every URL of a round has failed does it wait, with the growing,
 * jittered backoff (reconnectDelay). A dropped connection waits the first backoff step before the next dial,
 * so a fleet that loses its replica does not arrive at the next one in the same millisecond. With one URL
 * this is the backoff a node always had.
 */
export class ReplicaRotation {
  /** The index in `urls` of the replica dialed now (or next). */
  index = 0;
  /** Rounds that failed since the last connection: the backoff's attempt. */
  private attempt = 0;
  /** Dials that failed in the current round. */
  private failedInRound = 0;

  /** The longest wait between two rounds, ms. */
  private readonly capMs: number;

  constructor(
    readonly urls: readonly string[],
    /** The longest wait between two rounds with one URL, ms (several: at most SEVERAL_REPLICAS_CAP_MS). */
    capMs = 3000,
    private readonly random: () => number = Math.random,
  ) {
    if (urls.length === 0) throw new Error('no control plane URL');
    this.capMs = urls.length > 1 ? Math.min(capMs, SEVERAL_REPLICAS_CAP_MS) : capMs;
  }

  get current(): string {
    return this.urls[this.index]!;
  }

  /** The next dial goes to `index` (an earlier replica back: see ReturnToEarlier), with no backoff owed. */
  moveTo(index: number): void {
    this.index = index;
    this.attempt = 0;
    this.failedInRound = 0;
  }

  /** The dial of the current URL opened a connection. */
  connected(): void {
    this.attempt = 0;
    this.failedInRound = 0;
  }

  /**
   * The connection to the current URL ended (`wasOpen`) or its dial failed: moves to the next URL and says
   * how long to wait before dialing it, ms.
   */
  next(wasOpen: boolean): number {
    this.index = (this.index + 1) % this.urls.length;
    if (wasOpen) {
      this.failedInRound = 0;
      return reconnectDelay(this.attempt++, 200, this.capMs, this.random);
    }
    this.failedInRound++;
    if (this.failedInRound < this.urls.length) return 0;
    this.failedInRound = 0;
    return reconnectDelay(this.attempt++, 200, this.capMs, this.random);
  }
}

/** How often a node on a later replica asks the earlier ones whether they are ready again, ms (jittered ±50%). */
export const RETURN_PROBE_MS = 5000;
/** Answers in a row an earlier replica must give ready before the node moves back to it. */
export const RETURN_AFTER_READY = 3;

/**
 * Whether a node on a later replica of its list goes back to an earlier one. A node stays where its channel
 * holds, so after a replica's death and return the fleet was split between replicas, each of which places
 * LBs on its own nodes: the first replica of the list that is ready gathers them again. Only once it has
 * answered ready RETURN_AFTER_READY times in a row (about 15 s), so a replica that flaps does not pull the
 * fleet back and forth, and each node probes at its own jittered times, so the fleet does not move at once.
 * Pure.
 */
export class ReturnToEarlier {
  private target: number | null = null;
  private streak = 0;

  /** The probes' answer: the earliest replica before ours that is ready, or null; true when it is time to go. */
  observe(earliestReady: number | null): boolean {
    if (earliestReady !== this.target) {
      this.target = earliestReady;
      this.streak = 0;
    }
    if (earliestReady === null) return false;
    this.streak++;
    return this.streak >= RETURN_AFTER_READY;
  }

  /** Connected somewhere (again): counting starts over. */
  reset(): void {
    this.target = null;
    this.streak = 0;
  }
}

/** Whether the API replica at `base` answers its readiness check (database and Redis reachable) within 1 s. */
export async function replicaReady(base: string): Promise<boolean> {
  try {
    const res = await fetch(`${base.replace(/\/$/, '')}/readyz`, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

/** A URL as logged: without the password, if it carries one. */
export function loggableUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(not a URL)';
  }
}
