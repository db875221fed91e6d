/**
 * Connection states with their own idle timeout (seed 001: short once FIN/RST is seen, long while open). A
 * UDP flow is 'udp-unreplied' until its backend answers, as in Linux conntrack, so a flood of datagrams from
 * spoofed sources holds entries only briefly.
 */
export type FlowState = 'tcp-established' | 'tcp-closing' | 'udp' | 'udp-unreplied';

/** Idle timeouts in milliseconds, per state. */
export interface ConnTrackTimeouts {
  /** Default 900 000 (15 min, as LVS's established timeout). */
  readonly tcpEstablished: number;
  /** Default 10 000: after FIN/RST only stragglers remain. */
  readonly tcpClosing: number;
  /** Default 30 000: UDP has no end marker, idleness is the only signal. */
  readonly udp: number;
  /** Default 30 000 (Linux's unreplied UDP timeout): a UDP flow whose backend has not answered yet. */
  readonly udpUnreplied: number;
}

export interface ConnTrackOptions {
  /** Hard bound on entries; when full the least recently used entry is evicted. Default 262 144. */
  readonly maxEntries?: number;
  /** Idle timeouts by state. Defaults as in {@link ConnTrackTimeouts}. */
  readonly timeouts?: Partial<ConnTrackTimeouts>;
  /**
   * New entries per second the table accepts (token bucket, burst = one second's worth). Above it,
   * inserts are refused and the caller hashes instead (Katran's compute-only mode), so a SYN/UDP flood
   * cannot churn out the entries of established flows. Default 100 000.
   */
  readonly maxInsertsPerSecond?: number;
  /**
   * Recency is refreshed in the LRU order at most this often per entry, so a hot flow does not reorder a
   * Map on every packet. Eviction is therefore LRU to within this granularity. Default 1 000 ms.
   */
  readonly touchGranularityMs?: number;
  /** Called for entries removed by expiry or eviction (not by `delete`), e.g. to close a UDP socket. */
  readonly onRemove?: (key: ConnKey, value: unknown, reason: 'expired' | 'evicted') => void;
}

export type ConnKey = string | number;

interface Entry<V> {
  value: V;
  state: FlowState;
  lastSeen: number;
  /** When the entry was last moved to the LRU tail. */
  ordered: number;
}

export type InsertResult = 'inserted' | 'evicted' | 'rate-limited';

const DEFAULT_TIMEOUTS: ConnTrackTimeouts = {
  tcpEstablished: 900_000,
  tcpClosing: 10_000,
  udp: 30_000,
  udpUnreplied: 30_000,
};

/**
 * The connection-tracking table: flow key → chosen backend, with idle timeouts by state, a hard size bound
 * with LRU eviction and an insert-rate cap. O(1) per operation; time is passed in (`now`, ms) so it is
 * pure and testable without clocks. Keys are built by the caller (see `flowKeyString`) because the cheapest
 * unique key depends on what is constant for the caller (a listener knows its own address and protocol).
 */
export class ConnTrackTable<V> {
  readonly maxEntries: number;
  readonly timeouts: ConnTrackTimeouts;
  readonly maxInsertsPerSecond: number;
  private readonly granularity: number;
  private readonly minTimeout: number;
  private readonly onRemove: ConnTrackOptions['onRemove'];
  // Map iteration order is insertion order; re-inserting on touch keeps it in LRU order.
  private readonly entries = new Map<ConnKey, Entry<V>>();
  private tokens: number;
  private refilledAt = Number.NEGATIVE_INFINITY;
  /** Inserts refused by the rate cap since creation. */
  rateLimited = 0;
  /** Entries evicted by the size bound since creation. */
  evicted = 0;

  constructor(options: ConnTrackOptions = {}) {
    this.maxEntries = options.maxEntries ?? 262_144;
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
    this.maxInsertsPerSecond = options.maxInsertsPerSecond ?? 100_000;
    this.granularity = options.touchGranularityMs ?? 1_000;
    this.onRemove = options.onRemove;
    this.tokens = this.maxInsertsPerSecond;
    const t = this.timeouts;
    this.minTimeout = Math.min(t.tcpEstablished, t.tcpClosing, t.udp, t.udpUnreplied);
  }

  get size(): number {
    return this.entries.size;
  }

  private timeoutOf(state: FlowState): number {
    switch (state) {
      case 'udp':
        return this.timeouts.udp;
      case 'udp-unreplied':
        return this.timeouts.udpUnreplied;
      case 'tcp-closing':
        return this.timeouts.tcpClosing;
      case 'tcp-established':
        return this.timeouts.tcpEstablished;
    }
  }

  private expired(e: Entry<V>, now: number): boolean {
    return now - e.lastSeen >= this.timeoutOf(e.state);
  }

  /** The entry's value if present and not idle past its timeout; a hit counts as activity. */
  lookup(key: ConnKey, now: number): V | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    if (this.expired(e, now)) {
      this.entries.delete(key);
      this.onRemove?.(key, e.value, 'expired');
      return undefined;
    }
    e.lastSeen = now;
    if (now - e.ordered >= this.granularity) {
      e.ordered = now;
      this.entries.delete(key);
      this.entries.set(key, e);
    }
    return e.value;
  }

  /** Reads without refreshing (for metrics and tests). */
  peek(key: ConnKey): { value: V; state: FlowState; lastSeen: number } | undefined {
    const e = this.entries.get(key);
    return e && { value: e.value, state: e.state, lastSeen: e.lastSeen };
  }

  /**
   * Adds or replaces an entry. Returns 'rate-limited' (nothing stored) when the insert-rate cap is hit,
   * 'evicted' when the least recently used entry had to make room.
   *
   * `remainingMs` (default: the state's full timeout) inserts an entry that has already been idle for part
   * of its timeout, e.g. one learnt from a peer node with its remaining time. It never makes an existing
   * entry older than it is.
   */
  insert(key: ConnKey, value: V, state: FlowState, now: number, remainingMs?: number): InsertResult {
    const lastSeen =
      remainingMs === undefined ? now : now - Math.max(0, this.timeoutOf(state) - Math.max(0, remainingMs));
    const existing = this.entries.get(key);
    if (existing !== undefined) {
      existing.value = value;
      existing.state = state;
      existing.lastSeen = Math.max(existing.lastSeen, lastSeen);
      return 'inserted';
    }
    if (!this.takeToken(now)) {
      this.rateLimited++;
      return 'rate-limited';
    }
    let result: InsertResult = 'inserted';
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) {
        const victim = this.entries.get(oldest.value)!;
        this.entries.delete(oldest.value);
        const reason = this.expired(victim, now) ? 'expired' : 'evicted';
        if (reason === 'evicted') {
          this.evicted++;
          result = 'evicted';
        }
        this.onRemove?.(oldest.value, victim.value, reason);
      }
    }
    this.entries.set(key, { value, state, lastSeen, ordered: now });
    return result;
  }

  /** Moves a flow to another state (e.g. FIN seen → 'tcp-closing'), which changes its idle timeout. */
  setState(key: ConnKey, state: FlowState, now: number): void {
    const e = this.entries.get(key);
    if (e === undefined) return;
    e.state = state;
    e.lastSeen = now;
  }

  delete(key: ConnKey): boolean {
    return this.entries.delete(key);
  }

  /**
   * Removes idle entries, looking at no more than `budget` entries from the least recently used end, so a
   * periodic sweep has a bounded cost whatever the table size. Returns how many were removed.
   */
  sweep(now: number, budget = 10_000): number {
    let removed = 0;
    let seen = 0;
    for (const [key, e] of this.entries) {
      if (seen++ >= budget) break;
      if (!this.expired(e, now)) {
        // `ordered` never decreases along the Map, and an idle entry is at least the shortest timeout
        // old there, so once an entry is younger than that nothing after it can be idle.
        if (now - e.ordered < this.minTimeout) break;
        continue;
      }
      this.entries.delete(key);
      this.onRemove?.(key, e.value, 'expired');
      removed++;
    }
    return removed;
  }

  /** Every live entry (for draining on reload); not for the forwarding path. */
  *values(): IterableIterator<[ConnKey, V]> {
    for (const [k, e] of this.entries) yield [k, e.value];
  }

  private takeToken(now: number): boolean {
    const rate = this.maxInsertsPerSecond;
    if (now > this.refilledAt) {
      const elapsed = this.refilledAt === Number.NEGATIVE_INFINITY ? 1_000 : now - this.refilledAt;
      this.tokens = Math.min(rate, this.tokens + (elapsed * rate) / 1_000);
      this.refilledAt = now;
    }
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** Canonical textual 5-tuple key, for callers that have no cheaper unique key. */
export function flowKeyString(flow: {
  readonly srcAddr: string;
  readonly srcPort: number;
  readonly dstAddr: string;
  readonly dstPort: number;
  readonly protocol: string;
}): string {
  return `${flow.protocol}|${flow.srcAddr}|${flow.srcPort}|${flow.dstAddr}|${flow.dstPort}`;
}
