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
