import type { Store } from '@slb/db';
import type { Clock, Timer } from './clock.js';

/** How long after a controller start the nodes it did not hear from yet have to reconnect. */
export const REJOIN_GRACE_MS = 10_000;

/**
 * The nodes of a kind the previous controller last saw online: those whose heartbeat was stored within the
 * offline threshold of the newest heartbeat of any node (the controller stops storing them when it dies),
 * and (`since`, wall ms) no earlier than that.
 */
export async function lastKnownNodes(
  store: Store,
  kind: 'l4' | 'l7',
  offlineAfterMs: number,
  since = 0,
): Promise<Map<string, string>> {
  const { t } = store;
  const rows = await store.read((q) => q.select().from(t.nodes));
  const beats = rows.map((r) => (r.lastHeartbeatAt ? Date.parse(r.lastHeartbeatAt) : 0));
  const newest = Math.max(0, ...beats);
  return new Map(
    rows
      .filter((r, i) => r.kind === kind && beats[i]! > 0 && beats[i]! >= Math.max(since, newest - offlineAfterMs))
      .map((r) => [r.id, r.address]),
  );
}

/**
 * After a restart, the nodes the previous controller knew, held in their place until they reconnect (or
 * the grace ends). L7 nodes stay in the L4 nodes' L7 pool: L4 nodes that reconnect first would otherwise get
 * an empty pool and refuse every HTTP connection until the L7 nodes are back. L4 nodes keep the LBs they
 * hosted: the first L4 node back would otherwise take them all.
 */
export class NodeRejoin {
  private timer: Timer | null = null;

  /** `expired` gets the nodes that did not come back in time (called only if there are any). */
  constructor(
    /** nodeId → address. */
    private readonly waiting: Map<string, string>,
    clock: Clock,
    graceMs: number,
    expired: (nodeIds: string[]) => void,
  ) {
    if (waiting.size === 0) return;
    this.timer = clock.setTimeout(() => {
      this.timer = null;
      if (this.waiting.size === 0) return;
      const late = [...this.waiting.keys()];
      this.waiting.clear();
      expired(late);
    }, graceMs);
  }

  /** The node is back (or gone for good): no longer held for it. */
  delete(nodeId: string): void {
    this.waiting.delete(nodeId);
  }

  entries(): [nodeId: string, address: string][] {
    return [...this.waiting];
  }

  nodeIds(): Set<string> {
    return new Set(this.waiting.keys());
  }

  stop(): void {
    this.timer?.cancel();
  }
}
