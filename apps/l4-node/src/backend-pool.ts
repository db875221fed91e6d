import {
  createScheduler,
  DenseSet,
  type DenseSlot,
  type FlowKey,
  PersistenceTable,
  type Scheduler,
  type SchedulerKind,
} from '@slb/balancing';
import type { BackendMetrics, L4Metrics, ListenerMetrics } from './metrics.js';

/** Something forwarded to a backend that draining may have to cut: a TCP session or a UDP flow. */
export interface TrackedConn {
  /** Closes it now because its drain timeout passed. */
  drainClose(): void;
  /** Its place among its backend's open connections (-1 until tracked); the backend's set keeps it. */
  backendSlot: number;
}

const BACKEND_SLOT: DenseSlot<TrackedConn> = {
  get: (c) => c.backendSlot,
  set: (c, slot) => {
    c.backendSlot = slot;
  },
};

/** What a backend's open connections are read as. */
export type OpenConns = Iterable<TrackedConn> & { readonly size: number };

/**
 * The pool's view of a backend as the snapshot describes it (TCP/UDP servers or, for HTTP, L7 nodes): the
 * snapshot's own backend objects fit it, so a fleet's 100,000 of them are not copied per listener.
 */
export interface BackendSpec {
  readonly serverId: string;
  readonly address: string;
  readonly port: number;
  readonly weight: number;
  readonly healthy: boolean;
}

/** No connection open: shared by every backend that has none (most of a fleet's, most of the time). */
const NO_CONNS: OpenConns = new DenseSet(BACKEND_SLOT);

/** What only a backend that carried traffic, drains or left needs: most of a fleet's never do. */
interface BackendLife {
  open: DenseSet<TrackedConn> | undefined;
  handles: BackendMetrics | undefined;
  drainTimer: NodeJS.Timeout | undefined;
  /** No longer in its listener's config: its metric series go with its last connection. */
  gone: boolean;
}

/**
 * A backend and its live state; kept across reloads while its id, address and port stay the same. A node
 * holds a fleet's worth (500,000 listener × server pairs and more), most never connected to, so it is kept
 * small: it follows the snapshot's own backend object (shared by a server group's listeners, see
 * backend-intern.ts) instead of copying its fields, and the connections, metric handles and drain timer
 * are made on first use.
 */
export class BackendState {
  /** Takes new flows (part of the scheduler's candidate list). */
  candidate = false;
  active = 0;
  private life: BackendLife | undefined;

  constructor(
    /** The snapshot's backend it follows: weight and health change on reload, id, address and port never. */
    private spec: BackendSpec,
    /** Makes this backend's metric handles (L4Metrics.forBackend), on first use. */
    private readonly metricsOf: (backendId: string) => BackendMetrics,
  ) {}

  get id(): string {
    return this.spec.serverId;
  }
  get address(): string {
    return this.spec.address;
  }
  get port(): number {
    return this.spec.port;
  }
  get weight(): number {
    return this.spec.weight;
  }
  get healthy(): boolean {
    return this.spec.healthy;
  }

  /** Takes the weight and health of a reload's spec of the same server (same id, address and port). */
  follow(spec: BackendSpec): void {
    this.spec = spec;
  }

  private get lived(): BackendLife {
    this.life ??= { open: undefined, handles: undefined, drainTimer: undefined, gone: false };
    return this.life;
  }

  get drainTimer(): NodeJS.Timeout | undefined {
    return this.life?.drainTimer;
  }
  set drainTimer(timer: NodeJS.Timeout | undefined) {
    if (timer !== undefined || this.life !== undefined) this.lived.drainTimer = timer;
  }

  /** Connections and flows forwarded to it now. */
  get conns(): OpenConns {
    return this.life?.open ?? NO_CONNS;
  }

  get metrics(): BackendMetrics {
    const life = this.lived;
    if (life.handles === undefined) {
      const handles = this.metricsOf(this.id);
      life.handles = handles;
      // Counted after it left (a connect that failed late): counted, and its series go with it.
      if (life.gone && this.conns.size === 0) queueMicrotask(() => handles.retire());
    }
    return life.handles;
  }

  /** A connection or flow on it started. */
  track(conn: TrackedConn): void {
    const life = this.lived;
    life.open ??= new DenseSet(BACKEND_SLOT);
    life.open.add(conn);
  }

  /** A connection or flow on it ended. */
  release(conn: TrackedConn): void {
    const life = this.life;
    if (life === undefined) return;
    life.open?.delete(conn);
    if (life.open?.size === 0) life.open = undefined;
    if (life.gone && this.conns.size === 0) life.handles?.retire();
  }

  /**
   * Left its listener's config (removed, or the listener went away). A removed backend's series would stay
   * in /metrics for the node's lifetime, one set per server ever configured: they go once nothing is open.
   */
  leave(): void {
    const life = this.lived;
    life.gone = true;
    if (this.conns.size === 0) life.handles?.retire();
  }
}

export interface PoolSettings {
  readonly scheduler: SchedulerKind;
  /** ms; 0 closes a drained backend's connections at once. */
  readonly drainTimeoutMs: number;
  /** ms; 0 = persistence off. */
  readonly persistenceTimeoutMs: number;
}

/** A listener's pool settings: the snapshot gives its timeouts in seconds, the pool counts in ms. */
export function poolSettings(c: {
  readonly scheduler: SchedulerKind;
  readonly connectionDrainTimeout: number;
  readonly persistenceTimeout: number;
}): PoolSettings {
  return {
    scheduler: c.scheduler,
    drainTimeoutMs: c.connectionDrainTimeout * 1000,
    persistenceTimeoutMs: c.persistenceTimeout * 1000,
  };
}

/**
 * A listener's backends: which take new flows, the scheduler over them, client persistence, and draining of
 * backends that were removed or set to weight 0. Updated in place on reload so counters and live
 * connections carry over; the scheduler (and its Maglev table) is rebuilt here, never per flow.
 */
export class BackendPool {
  private readonly byId = new Map<string, BackendState>();
  private candidates: BackendState[] = [];
  private scheduler: Scheduler = createScheduler('rr', { backends: [] });
  private persistence: PersistenceTable | undefined;
  private persistenceMs = 0;
  private noneHealthy = false;
  /**
   * The config of a pool no flow has needed yet: built on first use. A node holds thousands of listeners
   * most of which see no traffic, and their backends' state, maps and schedulers were a third of a fleet's
   * heap (10,000 listeners x 50 servers) and of its apply.
   */
  private pending: { specs: readonly BackendSpec[]; settings: PoolSettings } | undefined;

  /** One function for the pool's backends, not one each. */
  private readonly metricsOf: (backendId: string) => BackendMetrics;

  constructor(
    listenerId: string,
    metrics: L4Metrics,
    private readonly lm: ListenerMetrics,
  ) {
    this.metricsOf = (backendId) => metrics.forBackend(listenerId, backendId);
  }

  /** No backend was healthy, so new flows go to all positive-weight ones (counted per flow). */
  get failOpen(): boolean {
    this.build();
    return this.noneHealthy;
  }

  /** Takes a reload's backends and settings: at once if the pool was built, else when it is first used. */
  update(specs: readonly BackendSpec[], settings: PoolSettings): void {
    if (this.byId.size === 0 && this.persistence === undefined) {
      // Nothing live to carry over or drain: nothing was ever built, or the pool has no backends.
      this.pending = { specs, settings };
      return;
    }
    this.pending = undefined;
    this.apply(specs, settings);
  }

  /** Builds the pool from its pending config, if it has one. */
  private build(): void {
    const pending = this.pending;
    if (pending === undefined) return;
    this.pending = undefined;
    this.apply(pending.specs, pending.settings);
  }

  private apply(specs: readonly BackendSpec[], settings: PoolSettings): void {
    const next = new Map<string, BackendState>();
    for (const spec of specs) {
      let b = this.byId.get(spec.serverId);
      if (b !== undefined && (b.address !== spec.address || b.port !== spec.port)) b = undefined; // a new server
      if (b === undefined) b = new BackendState(spec, this.metricsOf);
      else b.follow(spec);
      next.set(spec.serverId, b);
    }
    for (const [id, old] of this.byId) {
      if (next.get(id) === old) continue;
      this.startDrain(old, settings.drainTimeoutMs);
      old.leave();
    }
    for (const b of next.values()) {
      if (b.weight === 0) this.startDrain(b, settings.drainTimeoutMs);
      else this.stopDrain(b);
    }
    this.byId.clear();
    for (const [id, b] of next) this.byId.set(id, b);

    const weighted = [...next.values()].filter((b) => b.weight > 0);
    const healthy = weighted.filter((b) => b.healthy);
    this.noneHealthy = healthy.length === 0 && weighted.length > 0;
    this.candidates = this.noneHealthy ? weighted : healthy;
    for (const b of next.values()) b.candidate = false;
    for (const b of this.candidates) b.candidate = true;
    const candidates = this.candidates;
    this.scheduler = createScheduler(settings.scheduler, {
      backends: candidates,
      load: (i) => candidates[i]!.active,
    });

    if (settings.persistenceTimeoutMs !== this.persistenceMs) {
      this.persistenceMs = settings.persistenceTimeoutMs;
      this.persistence =
        settings.persistenceTimeoutMs > 0
          ? new PersistenceTable({ timeoutMs: settings.persistenceTimeoutMs })
          : undefined;
    }
  }

  /** A backend by id if it is still configured (draining ones that were removed are not). */
  get(id: string): BackendState | undefined {
    this.build();
    return this.byId.get(id);
  }

  get candidateCount(): number {
    this.build();
    return this.candidates.length;
  }

  /**
   * The backend for a new flow: the client's persistent backend if it still takes flows, else the
   * scheduler's choice; backends in `tried` (failed connects of this flow) are skipped.
   */
  pick(flow: FlowKey, now: number, tried: readonly BackendState[] | undefined): BackendState | undefined {
    this.build();
    if (this.persistence !== undefined) {
      const id = this.persistence.get(flow.srcAddr, now);
      const b = id === undefined ? undefined : this.byId.get(id);
      if (b?.candidate && !tried?.includes(b)) return b;
    }
    const n = this.candidates.length;
    const i = this.scheduler.pick(flow);
    if (i < 0) return undefined;
    if (this.noneHealthy) this.lm.failOpen.inc();
    for (let k = 0; k < n; k++) {
      const b = this.candidates[(i + k) % n]!;
      if (!tried?.includes(b)) return b;
    }
    return undefined;
  }

  /** Records where a client went, for persistence. */
  remember(clientAddr: string, b: BackendState, now: number): void {
    this.persistence?.set(clientAddr, b.id, now);
  }

  /**
   * Records a client's backend learnt from a peer node, with its remaining time. Kept even when the server
   * is unknown here (this node may not have its config yet); `pick` only follows candidates.
   */
  learn(clientAddr: string, serverId: string, now: number, remainingMs: number): boolean {
    this.build();
    if (this.persistence === undefined) return false;
    this.persistence.set(clientAddr, serverId, now, remainingMs);
    return true;
  }

  /** ms; 0 when persistence is off. */
  get persistenceTimeoutMs(): number {
    return this.pending?.settings.persistenceTimeoutMs ?? this.persistenceMs;
  }

  get persistenceSize(): number {
    return this.persistence?.size ?? 0;
  }

  /** Live persistence entries as [client, serverId, remaining ms] (for a full sync republish). */
  persistenceEntries(now: number): Iterable<[string, string, number]> {
    return this.persistence?.entries(now) ?? [];
  }

  sweep(now: number): void {
    this.persistence?.sweep(now);
  }

  /** Drains every backend (the listener is going away). */
  drainAll(drainTimeoutMs: number): void {
    this.pending = undefined;
    for (const b of this.byId.values()) {
      this.startDrain(b, drainTimeoutMs);
      b.leave();
    }
    this.byId.clear();
  }

  private startDrain(b: BackendState, ms: number): void {
    if (b.drainTimer !== undefined) return;
    const cut = (): void => {
      b.drainTimer = undefined;
      for (const c of [...b.conns]) {
        this.lm.drained.inc();
        c.drainClose();
      }
    };
    if (ms === 0) cut();
    else b.drainTimer = setTimeout(cut, ms);
  }

  private stopDrain(b: BackendState): void {
    if (b.drainTimer === undefined) return;
    clearTimeout(b.drainTimer);
    b.drainTimer = undefined;
  }
}
