import { DEFAULT_MAX_CONNECTIONS_PER_CLIENT, UDP_UNREPLIED_TIMEOUT_S } from '@slb/model';

/** Node-wide settings for what one client can hold open (the per-listener cap comes with each listener). */
export interface NodeLimits {
  /**
   * Concurrent connections (TCP) or flows (UDP) one client address (an IPv6 client: its /64) holds per
   * listener; 0 turns the cap off. Default {@link DEFAULT_MAX_CONNECTIONS_PER_CLIENT}.
   */
  readonly maxConnectionsPerClient: number;
  /** Idle timeout of a UDP flow until its backend first answers, ms. Default {@link UDP_UNREPLIED_TIMEOUT_S}. */
  readonly udpUnrepliedTimeoutMs: number;
  /**
   * File descriptors the node's listeners, connections and flows may hold together ({@link fdBudgetFor}
   * of the process's open-file limit); beyond it new connections and flows are refused. Default: no bound.
   */
  readonly maxOpenFiles: number;
}

export const DEFAULT_NODE_LIMITS: NodeLimits = {
  maxConnectionsPerClient: DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
  udpUnrepliedTimeoutMs: UDP_UNREPLIED_TIMEOUT_S * 1000,
  maxOpenFiles: Number.POSITIVE_INFINITY,
};

/** Why a new connection or flow was refused (the `reason` label of slb_l4_refused_total). */
export type RefusalReason = 'listener_limit' | 'client_limit' | 'node_limit';

/**
 * The descriptors left to forwarding under an open-file limit: the rest is kept for what the node itself
 * needs (control channel, session-sync Redis, metrics scrapes, log and module files), so clients that fill
 * the node make it refuse them, not fail its own work with EMFILE.
 */
export function fdBudgetFor(openFileLimit: number): number {
  const reserve = Math.min(1024, Math.max(64, Math.floor(openFileLimit / 8)));
  return Math.max(0, openFileLimit - reserve);
}

/**
 * The node's descriptors held by forwarding, shared by every listener: a TCP session counts two (client
 * and backend), a UDP flow one, a listening socket one. A plain counter, so the hot path pays one compare.
 */
export class FdBudget {
  used = 0;

  constructor(readonly max: number) {}

  /** Takes `n` if they fit; false (nothing taken) otherwise. */
  tryTake(n: number): boolean {
    if (this.used + n > this.max) return false;
    this.used += n;
    return true;
  }

  /** Takes `n` whether or not they fit (a listening socket that is already open). */
  take(n: number): void {
    this.used += n;
  }

  give(n: number): void {
    this.used -= n;
  }
}

/**
 * A listener's open connections per client key ({@link clientKey}), for the per-client cap. Only clients
 * with something open have an entry, so its size is bounded by the listener's own cap.
 */
export class ClientCounts {
  private readonly counts = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Takes a slot for `key`; false (nothing taken) when that client is at the cap. */
  tryAcquire(key: string): boolean {
    const n = this.counts.get(key) ?? 0;
    if (n >= this.max) return false;
    this.counts.set(key, n + 1);
    return true;
  }

  release(key: string): void {
    const n = this.counts.get(key);
    if (n === undefined) return;
    if (n <= 1) this.counts.delete(key);
    else this.counts.set(key, n - 1);
  }

  /** Open connections of one client key (for tests and debugging). */
  of(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  /** Clients with something open. */
  get size(): number {
    return this.counts.size;
  }
}

/** The per-client counter a listener uses, or none when the cap is off. */
export function clientCountsFor(limits: NodeLimits): ClientCounts | undefined {
  return limits.maxConnectionsPerClient > 0 ? new ClientCounts(limits.maxConnectionsPerClient) : undefined;
}
