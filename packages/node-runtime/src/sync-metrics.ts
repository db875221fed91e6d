import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** What the table-size gauge asks each scope at scrape time. */
interface SizedScope {
  readonly scope: { readonly listenerId: string };
  readonly target: { sizes(): Readonly<Record<string, number>> };
}

/**
 * Session-sync metrics, registered in the node's own registry. Rates are Prometheus `rate()` over the
 * counters; the lag histogram is origin wall clock at creation → applied on this node.
 */
export class SyncMetrics {
  private readonly published: Counter<'listener'>;
  private readonly applied: Counter<'listener'>;
  private readonly coalesced: Counter<'listener'>;
  private readonly unpublished: Counter<'listener'>;
  private readonly malformed: Counter<'listener'>;
  readonly resyncs: Counter;
  readonly streamReads: Counter;
  readonly lag: Histogram;
  readonly redisUp: Gauge;

  constructor(registry: Registry, scopes: () => Iterable<SizedScope>) {
    const registers = [registry];
    const counter = (name: string, help: string) =>
      new Counter({ name, help, labelNames: ['listener'] as const, registers });
    this.published = counter('slb_session_sync_published_total', 'Entries written to Redis for peers');
    this.applied = counter('slb_session_sync_applied_total', "Peers' entries applied to the local tables");
    this.coalesced = counter(
      'slb_session_sync_coalesced_total',
      'Refreshes not published because the same entry was published recently',
    );
    this.unpublished = counter(
      'slb_session_sync_unpublished_total',
      'Entries that could not be published (Redis unavailable or backlog full); republished on resync',
    );
    this.malformed = counter('slb_session_sync_malformed_total', 'Sync messages or entries dropped as malformed');
    this.resyncs = new Counter({
      name: 'slb_session_sync_resyncs_total',
      help: 'Full resyncs (reload from Redis and republish of the local tables) after Redis was away',
      registers,
    });
    this.streamReads = new Counter({
      name: 'slb_session_sync_stream_reads_total',
      help: "Scopes' streams read: those named by activity notices, and every one at each sweep",
      registers,
    });
    this.lag = new Histogram({
      name: 'slb_session_sync_apply_lag_seconds',
      help: "Time from an entry's creation on a peer to its application here",
      buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.redisUp = new Gauge({ name: 'slb_session_sync_redis_up', help: '1 while connected to Redis', registers });
    new Gauge({
      name: 'slb_session_sync_table_entries',
      help: 'Entries in the synced tables per listener and table (a table that is empty has no series)',
      labelNames: ['listener', 'table'] as const,
      registers,
      collect() {
        this.reset();
        for (const s of scopes()) {
          // Empty tables are left out: a node with 10,000 listeners otherwise exported 30,000 zeros a scrape.
          for (const [table, n] of Object.entries(s.target.sizes()))
            if (n > 0) this.set({ listener: s.scope.listenerId, table }, n);
        }
      },
    });
  }

  /** A scope's counters: one label object and five small holders, not five bound functions and their arguments. */
  forScope(listener: string) {
    const l = { listener };
    return {
      published: new ScopeCount(this.published, l),
      applied: new ScopeCount(this.applied, l),
      coalesced: new ScopeCount(this.coalesced, l),
      unpublished: new ScopeCount(this.unpublished, l),
      malformed: new ScopeCount(this.malformed, l),
    };
  }
}

/** What prom-client's `labels()` gives, without the bound function each one is. */
class ScopeCount {
  constructor(
    private readonly counter: Counter<'listener'>,
    private readonly labels: { listener: string },
  ) {}

  inc(by = 1): void {
    this.counter.inc(this.labels, by);
  }
}
