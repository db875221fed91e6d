import { type CountSeries, PlainCounter, PlainGauge, promMetrics } from '@slb/metrics-kit';
import { TrafficTally } from '@slb/node-runtime';
import { type Counter, collectDefaultMetrics, Registry } from 'prom-client';

const LB = ['listener', 'backend'] as const;

/** A count the forwarding path moves. */
export interface Count {
  inc(by?: number): void;
  dec(by?: number): void;
}

/**
 * Per-backend series, resolved once so the forwarding path never looks labels up. `active`, `opened` and
 * the bytes also count into their listener's traffic (the heartbeat's summary).
 */
export interface BackendMetrics {
  readonly active: Count;
  readonly opened: Count;
  readonly bytesIn: Count;
  readonly bytesOut: Count;
  readonly connectFailures: CountSeries;
  /**
   * The backend is gone from its listener and has nothing open: its series leave the registry (unless
   * another holder of the same pair still uses them), and later updates through this object do nothing.
   */
  retire(): void;
}

/** Per-listener metric children; the refusals (ACL, limits, no backend) count as its traffic's drops too. */
export interface ListenerMetrics {
  readonly retries: Counter.Internal;
  readonly failOpen: Counter.Internal;
  readonly aclDenied: Counter.Internal;
  readonly noBackend: Counter.Internal;
  readonly untracked: Counter.Internal;
  readonly udpDropped: Counter.Internal;
  readonly drained: Counter.Internal;
  /** New connections or flows refused because the listener is at its maxConnections. */
  readonly refusedListenerLimit: Counter.Internal;
  /** New connections or flows refused because their client is at the per-client cap. */
  readonly refusedClientLimit: Counter.Internal;
  /** New connections or flows refused because the listener's tenant holds its share of the node. */
  readonly refusedTenantLimit: Counter.Internal;
  /** New connections or flows refused because the node's descriptor budget is spent. */
  readonly refusedNodeLimit: Counter.Internal;
  /** As {@link BackendMetrics.retire}, for a removed listener with no session left. */
  retire(): void;
}

/**
 * One counter of one listener. prom-client's `labels()` child is an object, a bound function and its
 * arguments, and counting through it hashes the labels all the same: eleven per listener, made when the
 * listener was, they were a sixth of the heap of a node holding 10,000 mostly idle listeners.
 */
class ListenerCount {
  constructor(
    private readonly metric: Counter<string>,
    private readonly labels: Partial<Record<string, string>>,
    /** A refusal also counts as its listener's drops. */
    private readonly drops: { drops: number } | undefined,
  ) {}

  inc(by = 1): void {
    this.metric.inc(this.labels, by);
    if (this.drops !== undefined) this.drops.drops += by;
  }
}

/** What a retired holder updates: nothing, so a late update cannot bring a removed series back. */
const DISCARD = { inc: () => {}, dec: () => {}, set: () => {} } as unknown as Counter.Internal & CountSeries;

/**
 * The node's Prometheus metrics in its own registry (not prom-client's global one), so several nodes can
 * live in one test process. "in" is client → backend, "out" is backend → client.
 */
export class L4Metrics {
  readonly registry = new Registry();
  private readonly prom = promMetrics(this.registry);
  /** Per-listener counters for the heartbeat's traffic summary (not exported to Prometheus). */
  readonly traffic = new TrafficTally();
  // Updated per connection: plain families (metrics-kit), whose series the forwarding path holds.
  private readonly pairCounter = (name: string, help: string) => new PlainCounter(name, help, LB, this.registry);
  private readonly active = new PlainGauge(
    'slb_l4_connections_active',
    'Open client connections (TCP) or flows (UDP) per listener and backend',
    LB,
    this.registry,
  );
  private readonly opened = this.pairCounter(
    'slb_l4_connections_total',
    'Connections (TCP) or flows (UDP) established to a backend',
  );
  private readonly bytesIn = this.pairCounter(
    'slb_l4_bytes_in_total',
    'Bytes from clients to a backend (open connections are added every second)',
  );
  private readonly bytesOut = this.pairCounter(
    'slb_l4_bytes_out_total',
    'Bytes from a backend to clients (open connections are added every second)',
  );
  private readonly connectFailures = this.pairCounter(
    'slb_l4_connect_failures_total',
    'Backend connect attempts that were refused, timed out or failed',
  );
  private readonly listenerCounter = (name: string, help: string) => this.prom.counter(name, help, ['listener']);
  private readonly retries = this.listenerCounter(
    'slb_l4_connect_retries_total',
    'Connects retried on another backend',
  );
  private readonly failOpen = this.listenerCounter(
    'slb_l4_fail_open_total',
    'New flows sent to unhealthy backends because no backend was healthy',
  );
  private readonly aclDenied = this.listenerCounter('slb_l4_acl_denied_total', 'Connections or flows refused by ACL');
  private readonly noBackend = this.listenerCounter(
    'slb_l4_no_backend_total',
    'Client connections closed because no backend could be reached',
  );
  private readonly untracked = this.listenerCounter(
    'slb_l4_conntrack_untracked_total',
    'UDP flows not tracked because the conntrack insert rate cap was hit (compute-only mode)',
  );
  private readonly udpDropped = this.listenerCounter(
    'slb_l4_udp_dropped_total',
    'UDP datagrams dropped (no backend, flow table refusing, or queue full)',
  );
  private readonly drained = this.listenerCounter(
    'slb_l4_drain_closed_total',
    'Connections closed when their backend or listener reached the drain timeout',
  );
  // Two reasons, never a client label: a flood from many sources must not create a series per source.
  private readonly refused = this.prom.counter(
    'slb_l4_refused_total',
    'New connections (TCP, closed at once) or flows (UDP, datagram dropped) refused by a limit',
    ['listener', 'reason'],
  );
  readonly configVersion = this.prom.gauge('slb_l4_config_version', 'Version of the applied config snapshot');
  readonly backendDenied = this.prom.counter(
    'slb_l4_backend_denied_total',
    'Backends left out of a listener when it was configured: a cloud endpoint, a special address or a loop',
    ['reason'],
  );
  readonly reloads = this.prom.counter('slb_l4_config_reloads_total', 'Config snapshot loads by result', ['result']);
  /** No listener label: a listener that cannot be built may not have an id worth a series. */
  readonly listenerFailures = this.prom.counter(
    'slb_l4_listener_failures_total',
    'Listeners of an applied config that could not be built (bad ACL, bind clash or failure); the rest were applied',
  );
  /** No listener label either: which listeners fail is in the heartbeat and the log; this is for alerting. */
  readonly bindFailing = this.prom.gauge(
    'slb_l4_listeners_bind_failing',
    'Listeners that cannot bind now (port taken, address not on the host) and are being retried',
  );
  readonly bindRetries = this.prom.counter(
    'slb_l4_bind_retries_total',
    'Binds of failed listeners tried again, by result (bound: the listener serves from then on)',
    ['result'],
  );
  readonly conntrackEntries = this.prom.gauge(
    'slb_l4_conntrack_entries',
    "Entries in the connection-tracking tables: a TCP listener's open connections, a UDP listener's flows",
    ['listener'],
  );

  /** Reports the node's descriptor budget and its use at each scrape (not per connection). */
  watchFdBudget(budget: { readonly used: number; readonly max: number }): void {
    this.prom.gauge(
      'slb_l4_forwarding_fds',
      'File descriptors held by listeners, connections and flows (used), and the budget for them (max)',
      ['kind'],
      {
        collect() {
          this.set({ kind: 'used' }, budget.used);
          if (Number.isFinite(budget.max)) this.set({ kind: 'max' }, budget.max);
        },
      },
    );
  }

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * A backend's children, each made on first use: a fleet-sized config has a million (listener, backend)
   * pairs, most of which never see a connection, and five series made up front for each ran the node out of
   * memory. Resolved once, the forwarding path still never looks labels up.
   */
  forBackend(listener: string, backend: string): BackendMetrics {
    const metrics = [this.active, this.opened, this.bytesIn, this.bytesOut, this.connectFailures] as const;
    const key = `${listener}\0${backend}`;
    this.hold(key);
    const traffic = this.traffic.hold(listener);
    let retired = false;
    /** A series made on first use, and DISCARD once retired. */
    const lazy = (metric: PlainCounter | PlainGauge) => {
      let child: CountSeries | undefined;
      return (): CountSeries => {
        if (retired) return DISCARD;
        child ??= metric.child([listener, backend]);
        return child;
      };
    };
    const active = lazy(this.active);
    const opened = lazy(this.opened);
    const bytesIn = lazy(this.bytesIn);
    const bytesOut = lazy(this.bytesOut);
    const connectFailures = lazy(this.connectFailures);
    /** The series and the listener's traffic field, together. */
    const tee = (series: () => CountSeries, field: 'active' | 'conns' | 'bytesIn' | 'bytesOut'): Count => ({
      inc: (by = 1) => {
        series().inc(by);
        traffic[field] += by;
      },
      dec: (by = 1) => {
        series().dec(by);
        traffic[field] -= by;
      },
    });
    const teeActive = tee(active, 'active');
    const teeOpened = tee(opened, 'conns');
    const teeIn = tee(bytesIn, 'bytesIn');
    const teeOut = tee(bytesOut, 'bytesOut');
    return {
      active: teeActive,
      opened: teeOpened,
      bytesIn: teeIn,
      bytesOut: teeOut,
      get connectFailures() {
        return connectFailures();
      },
      retire: () => {
        if (retired) return;
        retired = true;
        this.traffic.release(listener);
        if (this.release(key)) for (const m of metrics) m.remove({ listener, backend });
      },
    };
  }

  /** `reported`: in the heartbeat's traffic summary (false for http/https, which the L7 nodes report). */
  forListener(listener: string, reported = true): ListenerMetrics {
    const l = { listener };
    this.hold(listener);
    const traffic = this.traffic.hold(listener, false, reported);
    const count = (c: Counter<string>, labels: Partial<Record<string, string>> = l, drops = false) =>
      new ListenerCount(c, labels, drops ? traffic : undefined) as unknown as Counter.Internal;
    const counters = {
      retries: this.retries,
      failOpen: this.failOpen,
      aclDenied: this.aclDenied,
      noBackend: this.noBackend,
      untracked: this.untracked,
      udpDropped: this.udpDropped,
      drained: this.drained,
    };
    const children = (make: (c: Counter<'listener'>) => Counter.Internal) =>
      Object.fromEntries(Object.entries(counters).map(([name, c]) => [name, make(c)])) as Record<
        keyof typeof counters,
        Counter.Internal
      >;
    let retired = false;
    const live = children((c) => count(c));
    const m: ListenerMetrics = {
      ...live,
      aclDenied: count(this.aclDenied, l, true),
      noBackend: count(this.noBackend, l, true),
      refusedListenerLimit: count(this.refused, { listener, reason: 'listener_limit' }, true),
      refusedClientLimit: count(this.refused, { listener, reason: 'client_limit' }, true),
      refusedTenantLimit: count(this.refused, { listener, reason: 'tenant_limit' }, true),
      refusedNodeLimit: count(this.refused, { listener, reason: 'node_limit' }, true),
      retire: () => {
        if (retired) return;
        retired = true;
        this.traffic.release(listener);
        Object.assign(
          m,
          children(() => DISCARD),
          {
            refusedListenerLimit: DISCARD,
            refusedClientLimit: DISCARD,
            refusedTenantLimit: DISCARD,
            refusedNodeLimit: DISCARD,
          },
        );
        if (!this.release(listener)) return;
        for (const c of Object.values(counters)) c.remove(l);
        for (const reason of ['listener_limit', 'client_limit', 'tenant_limit', 'node_limit'])
          this.refused.remove({ listener, reason });
        this.conntrackEntries.remove(l);
      },
    };
    return m;
  }

  /**
   * Holders per label set: a listener re-bound (or a backend re-created) under the same id shares its
   * series with the outgoing one, which must not remove them when it retires.
   */
  private readonly holders = new Map<string, number>();

  private hold(key: string): void {
    this.holders.set(key, (this.holders.get(key) ?? 0) + 1);
  }

  /** True when the last holder let go. */
  private release(key: string): boolean {
    const n = (this.holders.get(key) ?? 1) - 1;
    if (n > 0) {
      this.holders.set(key, n);
      return false;
    }
    this.holders.delete(key);
    return true;
  }
}

/**
 * A listener's `slb_l4_conntrack_entries` series, set only when its size changed. Every listener sets it at
 * every sweep (each second), and each set looks its labels up: at 10,000 idle listeners that lookup was the
 * node's main cost at rest.
 */
export class ConntrackGauge {
  private last = -1;

  constructor(
    private readonly metrics: L4Metrics,
    private readonly listenerId: string,
  ) {}

  report(size: number): void {
    if (size === this.last) return;
    this.last = size;
    this.metrics.conntrackEntries.set({ listener: this.listenerId }, size);
  }
}
