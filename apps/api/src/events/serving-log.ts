/** A node as the hub sees it now: what it is and which LBs it serves. */
export interface ServingNode {
  kind: 'l4' | 'l7';
  address: string;
  lbs: ReadonlySet<string>;
}

export interface ServingChange {
  nodeId: string;
  kind: 'l4' | 'l7';
  address: string;
  lbId: string;
  joined: boolean;
}

export interface ServingLogOptions {
  /** Changes of one node recorded at once before it is held back. Default 5. */
  burst?: number;
  /** A held-back node earns one more recorded change per this many ms. Default 30,000. */
  intervalMs?: number;
}

/**
 * Which nodes serve which load balancer, as last recorded, turned into `node` events (joined, left): one
 * event per LB per recorded change of a node. Bounded against flapping by a token bucket per node: `burst`
 * changes at once (a node going away and coming back, a few LBs created), then one per `intervalMs`, each
 * recording the net change since the node's last record. A node flapping for an hour thus costs at most one
 * event per LB it serves per interval however often it flaps (1,000 LBs: at most 1,000 rows per 30 s, written
 * as one batch), and the record catches up with the truth at the next interval. Pure: the caller passes the
 * clock and the view.
 */
export class ServingLog {
  /** Per node, what was last recorded; the sets are the log's own, changed in place. */
  private readonly recorded = new Map<string, ServingNode & { lbs: Set<string> }>();
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly burst: number;
  private readonly intervalMs: number;

  constructor(options: ServingLogOptions = {}) {
    this.burst = options.burst ?? 5;
    this.intervalMs = options.intervalMs ?? 30_000;
  }

  private take(nodeId: string, now: number): number | null {
    const b = this.buckets.get(nodeId) ?? { tokens: this.burst, at: now };
    const tokens = Math.min(this.burst, b.tokens + (now - b.at) / this.intervalMs);
    if (tokens >= 1) {
      this.buckets.set(nodeId, { tokens: tokens - 1, at: now });
      return null;
    }
    this.buckets.set(nodeId, { tokens, at: now });
    return now + Math.ceil((1 - tokens) * this.intervalMs);
  }

  /**
   * A node's change to some LBs alone, in the time of the LBs named rather than of everything the node
   * serves: the changes, or, when the node's bucket holds them back, nothing recorded and the time to
   * observe the whole view again (which then records the node's net change).
   */
  recordLbs(
    nodeId: string,
    node: Omit<ServingNode, 'lbs'>,
    joined: readonly string[],
    left: readonly string[],
    now: number,
  ): { changes: ServingChange[]; retryAt: number | null } {
    const before = this.recorded.get(nodeId);
    const joins = joined.filter((lbId) => !before?.lbs.has(lbId));
    const leaves = left.filter((lbId) => before?.lbs.has(lbId));
    if (joins.length === 0 && leaves.length === 0) return { changes: [], retryAt: null };
    const retryAt = this.take(nodeId, now);
    if (retryAt !== null) return { changes: [], retryAt };
    const who = before ?? node;
    const lbs = before?.lbs ?? new Set<string>();
    const changes: ServingChange[] = [];
    for (const lbId of joins) {
      changes.push({ nodeId, kind: who.kind, address: who.address, lbId, joined: true });
      lbs.add(lbId);
    }
    for (const lbId of leaves) {
      changes.push({ nodeId, kind: who.kind, address: who.address, lbId, joined: false });
      lbs.delete(lbId);
    }
    if (lbs.size > 0) this.recorded.set(nodeId, { kind: who.kind, address: who.address, lbs });
    else this.recorded.delete(nodeId);
    return { changes, retryAt: null };
  }

  /**
   * The changes to record now, and when a held-back change may be recorded (null: none is held back). The
   * caller observes again by then, or anything later.
   */
  observe(view: ReadonlyMap<string, ServingNode>, now: number): { changes: ServingChange[]; retryAt: number | null } {
    const changes: ServingChange[] = [];
    let retryAt: number | null = null;
    const nodeIds = new Set([...this.recorded.keys(), ...view.keys()]);
    for (const nodeId of nodeIds) {
      const before = this.recorded.get(nodeId);
      const after = view.get(nodeId);
      const beforeLbs = before?.lbs ?? EMPTY;
      const afterLbs = after?.lbs ?? EMPTY;
      if (sameSet(beforeLbs, afterLbs)) continue;
      const until = this.take(nodeId, now);
      if (until !== null) {
        retryAt = retryAt === null ? until : Math.min(retryAt, until);
        continue;
      }
      const who = (after ?? before)!;
      for (const lbId of afterLbs) {
        if (!beforeLbs.has(lbId)) changes.push({ nodeId, kind: who.kind, address: who.address, lbId, joined: true });
      }
      for (const lbId of beforeLbs) {
        if (!afterLbs.has(lbId)) changes.push({ nodeId, kind: who.kind, address: who.address, lbId, joined: false });
      }
      if (after && after.lbs.size > 0) this.recorded.set(nodeId, { ...after, lbs: new Set(after.lbs) });
      else this.recorded.delete(nodeId);
    }
    // Forget the buckets of nodes gone and full again, so the map does not grow with every node ever seen.
    for (const [nodeId, b] of this.buckets) {
      const full = b.tokens + (now - b.at) / this.intervalMs >= this.burst;
      if (full && !this.recorded.has(nodeId) && !view.has(nodeId)) this.buckets.delete(nodeId);
    }
    return { changes, retryAt };
  }
}

const EMPTY: ReadonlySet<string> = new Set();

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}
