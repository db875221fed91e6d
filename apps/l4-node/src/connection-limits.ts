import { DEFAULT_MAX_CONNECTIONS_PER_CLIENT, DEFAULT_TENANT_SHARE_OF_NODE, UDP_UNREPLIED_TIMEOUT_S } from '@slb/model';

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
  /**
   * The share (0–1] of `maxOpenFiles` one tenant's listeners may hold together on this node, so one tenant's
   * flood leaves the rest to the others. Default {@link DEFAULT_TENANT_SHARE_OF_NODE}.
   */
  readonly tenantShare: number;
}

export const DEFAULT_NODE_LIMITS: NodeLimits = {
  maxConnectionsPerClient: DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
  udpUnrepliedTimeoutMs: UDP_UNREPLIED_TIMEOUT_S * 1000,
  maxOpenFiles: Number.POSITIVE_INFINITY,
  tenantShare: DEFAULT_TENANT_SHARE_OF_NODE,
};

/** Why a new connection or flow was refused (the `reason` label of slb_l4_refused_total). */
export type RefusalReason = 'listener_limit' | 'client_limit' | 'tenant_limit' | 'node_limit';

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
