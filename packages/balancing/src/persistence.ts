import { ConnTrackTable } from './conntrack.js';

export interface PersistenceOptions {
  /** How long a client keeps its backend after its last new connection, ms. */
  readonly timeoutMs: number;
  /** Hard bound on remembered clients (LRU eviction). Default 262 144. */
  readonly maxEntries?: number;
}

/**
 * Client-IP persistence ("persistence timeout" in LVS/CLB): a client address keeps the backend it was last
 * sent to for `timeoutMs` after its last connection, across connections. Built on the conntrack table so
 * it has the same bound and eviction.
 */
export class PersistenceTable {
  private readonly table: ConnTrackTable<string>;
  readonly timeoutMs: number;

  constructor(options: PersistenceOptions) {
    this.timeoutMs = options.timeoutMs;
    this.table = new ConnTrackTable<string>({
      maxEntries: options.maxEntries,
      timeouts: { udp: options.timeoutMs },
      // Persistence entries are one per client, not per flow: a flood of clients is bounded by maxEntries.
      maxInsertsPerSecond: Number.POSITIVE_INFINITY,
    });
  }

  get size(): number {
    return this.table.size;
  }

  /** The remembered backend id of a client, refreshing its timer. */
  get(clientAddr: string, now: number): string | undefined {
    return this.table.lookup(clientAddr, now);
  }

  /** Remembers a client's backend; `remainingMs` (default the full timeout) for entries learnt from peers. */
  set(clientAddr: string, backendId: string, now: number, remainingMs?: number): void {
    this.table.insert(clientAddr, backendId, 'udp', now, remainingMs);
  }

  /** The remembered backend and remaining time of a client, without refreshing it. */
  peek(clientAddr: string, now: number): { backendId: string; remainingMs: number } | undefined {
    const e = this.table.peek(clientAddr);
    if (e === undefined) return undefined;
    const remainingMs = this.timeoutMs - (now - e.lastSeen);
    return remainingMs > 0 ? { backendId: e.value, remainingMs } : undefined;
  }

  /** Every live entry with its remaining time (for a full resync to peers); not for the forwarding path. */
  *entries(now: number): IterableIterator<[string, string, number]> {
    for (const [k] of this.table.values()) {
      const p = this.peek(k as string, now);
      if (p !== undefined) yield [k as string, p.backendId, p.remainingMs];
    }
  }

  delete(clientAddr: string): void {
    this.table.delete(clientAddr);
  }

  sweep(now: number, budget?: number): number {
    return this.table.sweep(now, budget);
  }
}
