import { type ListenerFailure, MAX_LISTENERS_PER_NODE, type NodeSnapshot, type SnapshotListener } from '@slb/model';
import {
  BindRetries,
  type BindRetryOptions,
  bindFailureReason,
  reusePortByVersion,
  type SessionSync,
  Slicer,
  type SnapshotChange,
} from '@slb/node-runtime';
import type { Logger } from 'pino';
import { ApplyLog } from './apply-log.js';
import { BackendInterner } from './backend-intern.js';
import { DEFAULT_NODE_LIMITS, type NodeLimits } from './connection-limits.js';
import { NodeFds } from './fd-budget.js';
import { bindKeys, bindSpec, claimBinds } from './listener-binds.js';
import { L4Metrics } from './metrics.js';
import { RAW_TCP_REUSEPORT } from './raw-tcp.js';
import { type CheckedBackends, guardOf, isHttp, type NodeSide, resolveListener } from './resolve-listener.js';
import { upstreamSource } from './source-address.js';
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
  /**
   * The node's own address (SLB_NODE_ADDRESS), the source of every upstream connection (to L7 nodes and
   * backends): listeners bind the LB's VIP, which is not this node's alone. Default none, and so for a
   * wildcard or a host name: the kernel chooses.
   */
  readonly sourceAddress?: string;
  /**
   * This runtime can share an address:port with peer nodes (SO_REUSEPORT), as main.ts probed it. Default:
   * what the raw TCP bindings and the Node.js version say. Listeners asking for `reusePort` on a runtime
   * without it bind exclusively (one warning per node): the hub should not have asked.
   */
  readonly reusePort?: boolean;
  /** Backoff of the bind retries of listeners that could not bind. Default 250 ms doubling to 5 s, jittered. */
  readonly bindRetry?: BindRetryOptions;
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
  private node: NodeSide;
  private queue: Promise<unknown> = Promise.resolve();
  /** Listeners that could not bind, each with the config it waits to serve; tried again by `retries`. */
  private readonly retrying = new Map<string, { l: SnapshotListener; resolved: ResolvedListener }>();
  private readonly retries: BindRetries;
  /** Every listener of the applied config this node does not serve as sent, with why (see currentFailures). */
  private readonly failures = new Map<string, string>();
  private warnedReusePort = false;
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
    this.node = {
      sourceAddress: upstreamSource(options.sourceAddress),
      reusePort: options.reusePort ?? (RAW_TCP_REUSEPORT && reusePortByVersion(process.version)),
    };
    this.retries = new BindRetries(options.bindRetry);
  }

  /**
   * Sets the node's own address once it is known for sure (a node's credential carries the address the
   * control plane registered): listeners built from then on connect upstream from it.
   */
  useSourceAddress(address: string | undefined): void {
    this.node = { ...this.node, sourceAddress: upstreamSource(address) };
  }

  /**
   * The listeners of the applied config this node does not serve as sent now: binds still being retried,
   * and configs it could not build (those keep their last good config, if any). Sent in every heartbeat,
   * so the control plane sees a failure heal (or appear) between two configs.
   */
  currentFailures(): ListenerFailure[] {
    return [...this.failures].map(([listenerId, reason]) => ({ listenerId, reason }));
  }

  /** The addresses bound by running listeners (the hello says them: see ControlChannelOptions.boundVips). */
  boundVips(): string[] {
    const vips = new Set<string>();
    for (const l of this.listeners.values()) for (const a of l.cfg.config.bindAddresses) vips.add(a);
    return [...vips].slice(0, MAX_LISTENERS_PER_NODE);
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
    this.failures.set(id, reason);
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
      candidates = [...this.listeners.keys(), ...this.retrying.keys()].map((id) => [id, wanted.get(id)]);
      upserts = s.listeners;
      // A full snapshot restates every listener: failures of those it no longer has are gone with them.
      for (const id of this.failures.keys()) if (!wanted.has(id)) this.failures.delete(id);
    }
    if (partial) for (const id of change.remove) this.failures.delete(id);
    const l7Changed =
      !partial && this.current !== undefined && JSON.stringify(this.current.l7Nodes) !== JSON.stringify(s.l7Nodes);
    // A new deny set (a delta may carry one with every listener the same object) reaches every listener.
    const denyChanged =
      !partial &&
      this.current !== undefined &&
      JSON.stringify(this.current.backendDeny) !== JSON.stringify(s.backendDeny);
    /** The listener must be resolved again though its config object is the one applied. */
    const redo = (l: SnapshotListener) => denyChanged || (isHttp(l) && l7Changed);
    // In slices: building thousands of listeners held the event loop for seconds, so heartbeats went unsent
    // and the listeners already serving stalled. Nothing else changes listeners meanwhile (bind retries
    // wait in the same queue).
    const slicer = new Slicer();
    const lines = new ApplyLog(log, candidates.length + upserts.length);
    // Removals first, so a port given up by one listener can be taken by another in the same snapshot.
    for (const [id, next] of candidates) {
      await slicer.pause();
      const waiting = this.retrying.get(id);
      if (waiting !== undefined) {
        // Still waiting for its port with the config it failed with: a new config is tried at once instead.
        if (next === undefined || next !== waiting.l || redo(next)) {
          this.stopRetrying(id);
          lines.listener({ listener: id }, next ? 'bind retry replaced by the new config' : 'bind retry dropped');
        }
        continue;
      }
      const listener = this.listeners.get(id);
      if (listener === undefined) continue;
      // The same object as last time (a delta's untouched listener) binds the same: no spec to build.
      if (next !== undefined && (next === this.applied.get(id) || bindSpec(next) === this.specs.get(id))) continue;
      listener.stop(listener.cfg.config.connectionDrainTimeout * 1000);
      this.listeners.delete(id);
      this.specs.delete(id);
      this.applied.delete(id);
      lines.listener({ listener: id }, next ? 'listener re-binding' : 'listener removed');
    }
    // A delta carries the unchanged listeners as the very same objects: those are skipped without work,
    // which matters when a node serves thousands of listeners and one server's weight changed.
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
    const interner = new BackendInterner();
    const checked: CheckedBackends = new WeakSet();
    for (const l of upserts) {
      await slicer.pause();
      // Kept above: the same config, still waiting for its bind.
      if (this.retrying.has(l.id)) continue;
      const existing = this.listeners.get(l.id);
      if (existing !== undefined && this.applied.get(l.id) === l && !redo(l)) continue;
      this.warnIfCannotShare(l);
      interner.intern(l);
      let resolved: ResolvedListener;
      try {
        resolved = resolveListener(l, s, allowed(l.id), this.node, checked);
        if (existing === undefined) claimBinds(bound, l);
      } catch (err) {
        this.fail(failed, l.id, (err as Error).message);
        continue;
      }
      this.applied.set(l.id, l);
      if (existing !== undefined) {
        this.failures.delete(l.id);
        existing.update(resolved);
        existing.configureSync().catch((err) => log.warn({ err, listener: l.id }, 'session sync attach failed'));
        continue;
      }
      starting.push({ l, listener: this.newListener(resolved) });
    }
    // New listeners start side by side: one after another, a full snapshot of thousands took tens of seconds,
    // each waiting for its session-sync load (a Redis round trip) and its bind.
    await withConcurrency(starting, START_CONCURRENCY, async ({ l, listener }) => {
      const reason = await this.startListener(l, listener);
      if (reason === null) {
        this.serve(l, listener);
        lines.listener(
          { listener: l.id, protocol: l.protocol, port: l.port, bind: l.bindAddresses },
          'listener started',
        );
        return;
      }
      this.applied.delete(l.id);
      this.fail(failed, l.id, reason);
      this.retryBind(l, listener.cfg, reason);
    });
    lines.summary(s.version);
    this.current = s;
    this.metrics.configVersion.set(s.version);
    // 'config applied' is said once per version by whoever applied it: the control channel (with its apply
    // time) or file mode (main.ts); saying it here too logged every version twice.
    log.debug({ version: s.version, listeners: this.listeners.size, failed: failed.length }, 'listeners reconciled');
    return failed;
  }

  /** transport, address and port → the running listener bound there, or the one waiting to bind there. */
  private boundAddresses(): Map<string, string> {
    const bound = new Map<string, string>();
    for (const [id, listener] of this.listeners) {
      for (const key of bindKeys(listener.cfg.config)) bound.set(key, id);
    }
    for (const [id, { l }] of this.retrying) for (const key of bindKeys(l)) bound.set(key, id);
    return bound;
  }

  /** The hub sends `reusePort` only to nodes that said they can; one that asks anyway is told once. */
  private warnIfCannotShare(l: SnapshotListener): void {
    if (l.reusePort !== true || this.node.reusePort || this.warnedReusePort) return;
    this.warnedReusePort = true;
    this.options.logger.warn(
      { listener: l.id, node: process.version },
      'listener asks to share its address:port (reusePort) but this runtime cannot: binding it exclusively',
    );
  }

  private newListener(resolved: ResolvedListener): AnyListener {
    return resolved.config.protocol === 'udp'
      ? new UdpListener(resolved, this.deps)
      : new TcpListener(resolved, this.deps);
  }

  /** Starts `listener`: null once it serves, else why it could not bind (it is stopped again). */
  private async startListener(l: SnapshotListener, listener: AnyListener): Promise<string | null> {
    try {
      // Peers' entries are loaded (bounded by the sync's load timeout) before the first packet is served.
      await listener.configureSync();
      await listener.start();
      return null;
    } catch (err) {
      listener.stop(0);
      return bindFailureReason(l.protocol === 'udp' ? 'udp' : 'tcp', err, l.bindAddresses[0]!, l.port);
    }
  }

  private serve(l: SnapshotListener, listener: AnyListener): void {
    this.listeners.set(l.id, listener);
    this.specs.set(l.id, bindSpec(l));
    this.failures.delete(l.id);
  }

  /**
   * Keeps trying to bind `l` until it binds or a config removes or changes it: the port may be freed by
   * whoever holds it, or the VIP added to the host, without the control plane sending anything.
   */
  private retryBind(l: SnapshotListener, resolved: ResolvedListener, reason: string): void {
    const entry = { l, resolved };
    this.retrying.set(l.id, entry);
    this.metrics.bindFailing.set(this.retrying.size);
    this.retries.schedule(l.id, reason, () => {
      // In the apply queue, so a try never interleaves with an apply (which may drop or replace it).
      const run = this.queue.then(() => this.tryBindAgain(entry));
      this.queue = run.catch(() => undefined);
      return run.catch((err) => `cannot bind: ${(err as Error).message}`);
    });
  }

  private async tryBindAgain(entry: { l: SnapshotListener; resolved: ResolvedListener }): Promise<string | null> {
    const { l } = entry;
    // Dropped or replaced by an apply while this try waited for the queue.
    if (this.retrying.get(l.id) !== entry) return null;
    const listener = this.newListener(entry.resolved);
    const reason = await this.startListener(l, listener);
    const log = this.options.logger;
    if (reason !== null) {
      this.metrics.bindRetries.inc({ result: 'failed' });
      if (this.failures.get(l.id) !== reason) log.warn({ listener: l.id, reason }, 'listener still cannot bind');
      this.failures.set(l.id, reason);
      return reason;
    }
    this.retrying.delete(l.id);
    this.metrics.bindFailing.set(this.retrying.size);
    this.metrics.bindRetries.inc({ result: 'bound' });
    this.applied.set(l.id, l);
    this.serve(l, listener);
    log.info(
      { listener: l.id, protocol: l.protocol, port: l.port, bind: l.bindAddresses, tries: this.retries.tries(l.id) },
      'listener bound after retry',
    );
    return null;
  }

  private stopRetrying(id: string): void {
    this.retries.cancel(id);
    this.retrying.delete(id);
    this.metrics.bindFailing.set(this.retrying.size);
  }

  private stopAllRetries(): void {
    this.retries.cancelAll();
    this.retrying.clear();
    this.metrics.bindFailing.set(0);
  }

  /**
   * Graceful stop: no new connections anywhere, established ones get up to their listener's drain timeout
   * (capped by `maxWaitMs`), then whatever is left is cut. Resolves when nothing is open any more.
   */
  async shutdown(maxWaitMs = Number.POSITIVE_INFINITY): Promise<void> {
    await this.queue;
    this.stopAllRetries();
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
    this.stopAllRetries();
    for (const l of this.listeners.values()) l.stop(0);
    this.listeners.clear();
    this.specs.clear();
  }
}
