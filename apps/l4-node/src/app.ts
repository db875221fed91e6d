import type { ListenerFailure, NodeSnapshot, SnapshotListener } from '@slb/model';
import { BackendGuard, type SessionSync, type SnapshotChange } from '@slb/node-runtime';
import type { Logger } from 'pino';
import { compileAcl } from './acl.js';
import type { BackendSpec } from './backend-pool.js';
import { DEFAULT_NODE_LIMITS, type NodeLimits } from './connection-limits.js';
import { NodeFds } from './fd-budget.js';
import { L4Metrics } from './metrics.js';
import { type ListenerDeps, type ResolvedListener, TcpListener } from './tcp-listener.js';
import { UdpListener } from './udp-listener.js';

export interface L4NodeOptions {
  readonly logger: Logger;
  /** Default: a fresh registry with default process metrics. */
  readonly metrics?: L4Metrics;
  /** ms clock for the conntrack and persistence tables. Default Date.now. */
  readonly now?: () => number;
  /** Session sync with peer nodes (listeners with `sessionSync` use it). Default none: local tables only. */
  readonly sync?: SessionSync;
  /** Per-client caps and the UDP unreplied timeout. Default {@link DEFAULT_NODE_LIMITS}. */
  readonly limits?: Partial<NodeLimits>;
}

type AnyListener = TcpListener | UdpListener;

/** Listeners started at once when a snapshot brings many new ones. */
const START_CONCURRENCY = 64;

/** Runs `work` over `items` with at most `limit` in flight. */
async function withConcurrency<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function bindKeys(l: SnapshotListener): string[] {
  const transport = l.protocol === 'udp' ? 'udp' : 'tcp';
  return l.bindAddresses.map((a) => `${transport} ${a}:${l.port}`);
}

/** Takes `l`'s addresses in `bound`, or throws naming the listener that holds one of them. */
function claimBinds(bound: Map<string, string>, l: SnapshotListener): void {
  const keys = bindKeys(l);
  for (const key of keys) {
    const holder = bound.get(key);
    if (holder !== undefined && holder !== l.id) throw new Error(`${key} is bound by listener ${holder}`);
  }
  for (const key of keys) bound.set(key, l.id);
}

/** What decides whether a listener can be updated in place or must be re-bound. */
function bindSpec(l: SnapshotListener): string {
  const transport = l.protocol === 'udp' ? 'udp' : 'tcp';
  return `${transport}|${l.port}|${[...l.bindAddresses].sort().join(',')}`;
}

/**
 * The guard for a snapshot: its deny set, and the node's own endpoints (every listener's address and
 * port on this node), so a backend that is this node itself is never dialled.
 */
function guardOf(s: NodeSnapshot): BackendGuard {
  const addresses = new Set<string>();
  const ports = new Set<number>();
  for (const l of s.listeners) {
    ports.add(l.port);
    for (const a of l.bindAddresses) addresses.add(a);
  }
  return new BackendGuard({ deny: s.backendDeny, self: { addresses: [...addresses], ports } });
}

/** HTTP/HTTPS listeners are spread across the healthy L7 nodes with PROXY v2 (the L7 node terminates). */
function resolve(
  l: SnapshotListener,
  s: NodeSnapshot,
  allowed: (b: SnapshotListener['backends'][number]) => boolean,
): ResolvedListener {
  const acl = compileAcl(l.acl);
  if (!acl.ok) throw new Error(`acl: ${acl.reason}`);
  const servers = new Set<string>();
  for (const [j, b] of l.backends.entries()) {
    if (servers.has(b.serverId)) throw new Error(`backends/${j}/serverId: duplicate ${b.serverId}`);
    servers.add(b.serverId);
  }
  const l7 = l.protocol === 'http' || l.protocol === 'https';
  const backends: BackendSpec[] = l7
    ? s.l7Nodes.map((n) => ({
        id: n.nodeId,
        address: n.address,
        port: l.l7Port ?? n.port,
        weight: 100,
        healthy: n.healthy,
      }))
    : l.backends.filter(allowed).map((b) => ({
        id: b.serverId,
        address: b.address,
        port: b.port,
        weight: b.weight,
        healthy: b.healthy,
      }));
  return { config: l, backends, proxyProtocol: l7 ? 'v2' : l.proxyProtocol, acl: acl.check, fromNodeAddress: l7 };
}

/**
 * The L4 node as a program without a process: applies snapshots (adding, updating and removing listeners
 * live) and owns the metrics. `main.ts` wires it to a config file, signals and a metrics port.
 */
export class L4Node {
  readonly metrics: L4Metrics;
  readonly listeners = new Map<string, AnyListener>();
  private readonly specs = new Map<string, string>();
  /** The snapshot object each running listener was last configured from. */
  private readonly applied = new Map<string, SnapshotListener>();
  private readonly deps: ListenerDeps;
  private queue: Promise<unknown> = Promise.resolve();
  current: NodeSnapshot | undefined;

  /** Descriptors held by listeners, connections and flows, against the node's budget. */
  readonly fds: NodeFds;

  constructor(private readonly options: L4NodeOptions) {
    this.metrics = options.metrics ?? new L4Metrics();
    const limits = { ...DEFAULT_NODE_LIMITS, ...options.limits };
    this.fds = new NodeFds(limits.maxOpenFiles, limits.tenantShare);
    this.metrics.watchFdBudget(this.fds.node);
    this.deps = {
      logger: options.logger,
      metrics: this.metrics,
      now: options.now ?? Date.now,
      sync: options.sync,
      limits,
      fds: this.fds,
    };
  }

  /**
   * Applies a validated snapshot. Calls are serialised. A listener that cannot be built (a bad ACL, a bind
   * that fails or clashes with another listener's) is left as it was, logged, counted and returned; every
   * other listener is applied.
   */
  apply(snapshot: NodeSnapshot, change?: SnapshotChange): Promise<ListenerFailure[]> {
    const run = this.queue.then(() => this.applyNow(snapshot, change));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private fail(failed: ListenerFailure[], id: string, reason: string): void {
    failed.push({ listenerId: id, reason });
    this.metrics.listenerFailures.inc();
    this.options.logger.error({ listener: id, reason }, 'listener not applied; the others are');
  }

  private async applyNow(s: NodeSnapshot, change?: SnapshotChange): Promise<ListenerFailure[]> {
    this.options.sync?.usePrefix(s.sessionSyncPrefix); // before any listener of this snapshot attaches
    const failed: ListenerFailure[] = [];
    const log = this.options.logger;
    // After a delta only the listeners it names are looked at: a weight change on a node with thousands of
    // listeners then costs what that listener costs. A changed L7 pool touches every HTTP listener: full pass.
    const partial = change !== undefined && this.current !== undefined && !change.l7NodesChanged;
    let candidates: [string, SnapshotListener | undefined][];
    let upserts: readonly SnapshotListener[];
    if (partial) {
      upserts = change.upsert as SnapshotListener[];
      candidates = [
        ...change.remove.map((id): [string, undefined] => [id, undefined]),
        ...upserts.map((l): [string, SnapshotListener] => [l.id, l]),
      ];
    } else {
      const wanted = new Map(s.listeners.map((l) => [l.id, l]));
      candidates = [...this.listeners.keys()].map((id) => [id, wanted.get(id)]);
      upserts = s.listeners;
    }
    // Removals first, so a port given up by one listener can be taken by another in the same snapshot.
    for (const [id, next] of candidates) {
      const listener = this.listeners.get(id);
      if (listener === undefined) continue;
      // The same object as last time (a delta's untouched listener) binds the same: no spec to build.
      if (next !== undefined && (next === this.applied.get(id) || bindSpec(next) === this.specs.get(id))) continue;
      listener.stop(listener.cfg.config.connectionDrainTimeout * 1000);
      this.listeners.delete(id);
      this.specs.delete(id);
      this.applied.delete(id);
      log.info({ listener: id }, next ? 'listener re-binding' : 'listener removed');
    }
    // A delta carries the unchanged listeners as the very same objects: those are skipped without work,
    // which matters when a node serves thousands of listeners and one server's weight changed.
    const l7Changed =
      !partial && this.current !== undefined && JSON.stringify(this.current.l7Nodes) !== JSON.stringify(s.l7Nodes);
    const starting: { l: SnapshotListener; listener: AnyListener }[] = [];
    const guard = guardOf(s);
    const allowed = (listenerId: string) => (b: SnapshotListener['backends'][number]) => {
      const reason = guard.check(b.address, b.port);
      if (reason === null) return true;
      this.metrics.backendDenied.labels(reason).inc();
      log.warn({ listener: listenerId, server: b.serverId, reason }, 'backend denied: not connecting to it');
      return false;
    };
    // Which listener holds each address and port, so one that asks for another's is refused alone.
    const bound = this.boundAddresses();
    for (const l of upserts) {
      const existing = this.listeners.get(l.id);
      const http = l.protocol === 'http' || l.protocol === 'https';
      if (existing !== undefined && this.applied.get(l.id) === l && !(http && l7Changed)) continue;
      let resolved: ResolvedListener;
      try {
        resolved = resolve(l, s, allowed(l.id));
        if (existing === undefined) claimBinds(bound, l);
      } catch (err) {
        this.fail(failed, l.id, (err as Error).message);
        continue;
      }
      this.applied.set(l.id, l);
      if (existing !== undefined) {
        existing.update(resolved);
        existing.configureSync().catch((err) => log.warn({ err, listener: l.id }, 'session sync attach failed'));
        continue;
      }
      const listener =
        l.protocol === 'udp' ? new UdpListener(resolved, this.deps) : new TcpListener(resolved, this.deps);
      starting.push({ l, listener });
    }
    // New listeners start side by side: one after another, a full snapshot of thousands took tens of seconds,
    // each waiting for its session-sync load (a Redis round trip) and its bind.
    await withConcurrency(starting, START_CONCURRENCY, async ({ l, listener }) => {
      try {
        // Peers' entries are loaded (bounded by the sync's load timeout) before the first packet is served.
        await listener.configureSync();
        await listener.start();
        this.listeners.set(l.id, listener);
        this.specs.set(l.id, bindSpec(l));
        log.info({ listener: l.id, protocol: l.protocol, port: l.port, bind: l.bindAddresses }, 'listener started');
      } catch (err) {
        listener.stop(0);
        this.applied.delete(l.id);
        this.fail(failed, l.id, `cannot bind: ${(err as Error).message}`);
      }
    });
    this.current = s;
    this.metrics.configVersion.set(s.version);
    // 'config applied' is said once per version by whoever applied it: the control channel (with its apply
    // time) or file mode (main.ts); saying it here too logged every version twice.
    log.debug({ version: s.version, listeners: this.listeners.size, failed: failed.length }, 'listeners reconciled');
    return failed;
  }

  /** transport, address and port → the running listener bound there. */
  private boundAddresses(): Map<string, string> {
    const bound = new Map<string, string>();
    for (const [id, listener] of this.listeners) {
      for (const key of bindKeys(listener.cfg.config)) bound.set(key, id);
    }
    return bound;
  }

  /**
   * Graceful stop: no new connections anywhere, established ones get up to their listener's drain timeout
   * (capped by `maxWaitMs`), then whatever is left is cut. Resolves when nothing is open any more.
   */
  async shutdown(maxWaitMs = Number.POSITIVE_INFINITY): Promise<void> {
    await this.queue;
    const all = [...this.listeners.values()];
    let wait = 0;
    for (const l of all) {
      const ms = l.cfg.config.connectionDrainTimeout * 1000;
      wait = Math.max(wait, ms);
      l.stop(ms);
    }
    this.listeners.clear();
    this.specs.clear();
    this.options.logger.info({ drainMs: Math.min(wait, maxWaitMs) }, 'listeners closed, draining connections');
    const deadline = Date.now() + Math.min(wait, maxWaitMs);
    while (Date.now() < deadline && all.some((l) => l.openCount > 0)) {
      await new Promise((r) => setTimeout(r, 50));
    }
    for (const l of all) l.stop(0);
  }

  /** Stops every listener and cuts their connections at once. */
  async close(): Promise<void> {
    await this.queue;
    for (const l of this.listeners.values()) l.stop(0);
    this.listeners.clear();
    this.specs.clear();
  }
}
