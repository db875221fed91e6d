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

  constructor(options: PersistenceOptions) {
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

  set(clientAddr: string, backendId: string, now: number): void {
    this.table.insert(clientAddr, backendId, 'udp', now);
  }

  delete(clientAddr: string): void {
    this.table.delete(clientAddr);
  }

  sweep(now: number, budget?: number): number {
    return this.table.sweep(now, budget);
  }
}
