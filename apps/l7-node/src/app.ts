import type { L7Listener, L7NodeSnapshot, ListenerFailure, ListenerTrafficReport } from '@slb/model';
import {
  BackendGuard,
  BindRetries,
  type BindRetryOptions,
  bindFailureReason,
  compileAcl,
  type SessionSync,
  Slicer,
} from '@slb/node-runtime';
import { type Logger, pino } from 'pino';
import { type ListenerBuild, type ListenerOptions, ListenerRuntime } from './listener.js';
import { ListenerStates } from './listener-states.js';
import { liveLabels } from './live-labels.js';
import { createMetrics, type Metrics, pruneSeries } from './metrics.js';
import { type PoolOptions, Pools } from './pools.js';
import type { ProxyDeps } from './proxy.js';
import { ProxySources } from './proxy-sources.js';
import type { RetryBudgetOptions } from './retry-budget.js';
import { type PassiveHealthOptions, poolKeysInUse } from './server-group.js';
import { listenerProblem } from './snapshot-loader.js';
import { buildCertificateSet } from './tls.js';
import { UpstreamPools } from './upstream-pool.js';

// The L7 node as a program without a process: apply snapshots, serve, close. main.ts adds the file,
// signals and the metrics port.

export interface L7AppOptions {
  readonly logger?: Logger;
  readonly metrics?: Metrics;
  /** Backends tried per request, first attempt included. Default 3. */
  readonly maxAttempts?: number;
  /** Passive health (outlier ejection). Defaults in PassiveHealthOptions. */
  readonly passiveHealth?: PassiveHealthOptions;
  readonly retryBudget?: RetryBudgetOptions;
  readonly pools?: PoolOptions;
  /** Listener socket limits; defaults in ListenerOptions. */
  readonly listener?: Partial<Omit<ListenerOptions, 'proxySources'>>;
  /** How long a removed listener may finish its in-flight requests, ms. Default 10000. */
  readonly drainMs?: number;
  /** Delay before state of backends no longer in use is forgotten after a change, ms. Default 1000. */
  readonly cleanupDelayMs?: number;
  /**
   * Session sync between L7 nodes: `server`-mode listeners share their learned backend cookies. The caller
   * owns it (closes it after `close()`); absent = local tables only.
   */
  readonly sync?: SessionSync;
  /** Backoff of the bind retries of listeners that could not bind. Default 250 ms doubling to 5 s, jittered. */
  readonly bindRetry?: BindRetryOptions;
}

export interface L7App {
  readonly metrics: Metrics;
  /**
   * Applies a validated snapshot: listeners that keep their sockets are updated in place. A listener that
   * cannot be built (no certificate, a bad one, an unknown group, a port it cannot bind) keeps what it
   * had, is logged and counted, and is returned; every other listener is applied.
   */
  apply(snapshot: L7NodeSnapshot): Promise<ListenerFailure[]>;
  /**
   * The listeners of the applied config this node does not serve as sent now: binds still being retried,
   * and configs it could not build. Sent in every heartbeat, so the control plane sees failures heal.
   */
  currentFailures(): ListenerFailure[];
  /** Each served listener's traffic counters now, for the heartbeat (bytes of open connections included). */
  trafficReports(): ListenerTrafficReport[];
  /** Bound ports of a listener (useful when the snapshot says port 0). */
  ports(listenerId: string): { proxy: number; direct: number | null } | undefined;
  readonly version: number | null;
  close(): Promise<void>;
}

export function createL7App(options: L7AppOptions = {}): L7App {
  const logger = options.logger ?? pino({ level: 'silent' });
  const metrics = options.metrics ?? createMetrics();
  const pools = new Pools(options.pools);
  const upstream = new UpstreamPools({
    connectionsPerBackend: options.pools?.connectionsPerBackend,
    connectTimeoutMs: options.pools?.connectTimeoutMs,
    idleTimeoutMs: options.pools?.keepAliveTimeoutMs,
  });
  const deps: ProxyDeps = {
    logger,
    metrics,
    pools,
    upstream,
    maxAttempts: options.maxAttempts ?? 3,
    connectTimeoutMs: options.pools?.connectTimeoutMs ?? 3000,
  };
  const health: Required<PassiveHealthOptions> = {
    consecutiveFailures: options.passiveHealth?.consecutiveFailures ?? 3,
    baseEjectionMs: options.passiveHealth?.baseEjectionMs ?? 5000,
    maxEjectionMs: options.passiveHealth?.maxEjectionMs ?? 300_000,
    maxEjectionPercent: options.passiveHealth?.maxEjectionPercent ?? 50,
  };
  const listenerOptions: ListenerOptions = {
    proxyHeaderTimeoutMs: options.listener?.proxyHeaderTimeoutMs ?? 5000,
    headersTimeoutMs: options.listener?.headersTimeoutMs ?? 10_000,
    maxHeaderSize: options.listener?.maxHeaderSize ?? 16_384,
    fastPath: options.listener?.fastPath ?? true,
    proxySources: new ProxySources(),
  };
  const drainMs = options.drainMs ?? 10_000;
  const listeners = new Map<string, ListenerRuntime>();
  // Survive reloads: passive-health and load counters, retry budgets, learned backend cookies.
  const states = new ListenerStates({ health, retryBudget: options.retryBudget, sync: options.sync, metrics, logger });
  let version: number | null = null;
  let latest: L7NodeSnapshot | null = null;
  let cleanupTimer: NodeJS.Timeout | null = null;
  /** Listeners removed or rebuilt whose requests are still finishing. */
  const draining = new Set<string>();
  /** Something left since the last cleanup: its metric series are pruned then. */
  let pruneDue = false;

  /**
   * Forgets the state of backends and pools no listener uses any more. It walks every backend, so it runs
   * once per quiet second rather than on every applied change (a delta touches one listener of thousands).
   */
  function scheduleCleanup(): void {
    if (cleanupTimer) return;
    cleanupTimer = setTimeout(() => {
      cleanupTimer = null;
      if (!latest) return;
      // An apply in slices is half done: `latest` is still the old config, and the states its listeners are
      // being built with would be forgotten. The apply schedules a cleanup when it ends.
      if (applyInProgress) return;
      if (states.backends.retain(latest.listeners)) pruneDue = true;
      metrics.backendStates.set(states.backends.size);
      pools.retain(poolKeysInUse(latest.listeners, pools.keys()));
      upstream.retain(poolKeysInUse(latest.listeners, upstream.keys()));
      // Walking every series costs at scale: only when a backend or a drained listener went away.
      if (!pruneDue) return;
      pruneDue = false;
      void pruneSeries(metrics, liveLabels(latest, draining)).catch((err: Error) =>
        logger.warn({ err: err.message }, 'metric series cleanup failed'),
      );
    }, options.cleanupDelayMs ?? 1000);
    cleanupTimer.unref();
  }

  /** The snapshot object each running listener was last built from. */
  const appliedConfigs = new Map<string, L7Listener>();
  /** The apply in progress; never rejected, so one failed apply cannot hold back the next. */
  let applying: Promise<unknown> = Promise.resolve();
  /** An apply has started and not ended (it yields the event loop between listeners). */
  let applyInProgress = false;

  /** Builds all a listener serves with; throws why when it cannot (nothing has moved yet then). */
  function build(l: L7Listener): ListenerBuild {
    const problem = listenerProblem(l);
    if (problem !== undefined) throw new Error(problem.slice(1));
    const acl = compileAcl(l.acl);
    if (!acl.ok) throw new Error(`acl: ${acl.reason}`);
    const certs = buildCertificateSet(l.certificates);
    return { state: states.stateFor(l, guard), certs, acl: acl.check };
  }

  /**
   * The snapshot's deny set and the node's own endpoints (every listener's address and ports, the bound
   * ones too when the snapshot says 0): a backend matching either is never dialled.
   */
  function guardOf(snapshot: L7NodeSnapshot): BackendGuard {
    const addresses = new Set<string>();
    const ports = new Set<number>();
    for (const l of snapshot.listeners) {
      if (l.bindAddress !== undefined) addresses.add(l.bindAddress);
      for (const p of [l.port, l.directPort ?? 0, ...Object.values(listeners.get(l.id)?.ports() ?? {})]) {
        if (typeof p === 'number' && p > 0) ports.add(p);
      }
    }
    return new BackendGuard({ deny: snapshot.backendDeny, self: { addresses: [...addresses], ports } });
  }
  let guard = new BackendGuard();
  /** The deny set the running listeners were built with, as JSON. */
  let appliedDeny: string | undefined;

  /** Every listener of the applied config not served as sent, with why. */
  const failures = new Map<string, string>();
  /** Listeners that could not bind, with the config each waits to serve; tried again by `retries`. */
  const retrying = new Map<string, { l: L7Listener }>();
  const retries = new BindRetries(options.bindRetry);

  function fail(failed: ListenerFailure[], id: string, reason: string): void {
    failed.push({ listenerId: id, reason });
    failures.set(id, reason);
    metrics.listenerFailures.inc();
    logger.error({ listener: id, reason }, 'listener not applied; the others are');
  }

  async function applyNow(sent: L7NodeSnapshot): Promise<ListenerFailure[]> {
    applyInProgress = true;
    try {
      return await applyInSlices(sent);
    } finally {
      applyInProgress = false;
    }
  }

  async function applyInSlices(sent: L7NodeSnapshot): Promise<ListenerFailure[]> {
    options.sync?.usePrefix(sent.sessionSyncPrefix); // before any listener of this snapshot attaches
    listenerOptions.proxySources.update(sent.l4Nodes);
    guard = guardOf(sent);
    // A new deny set (a delta may carry one with every listener the same object) reaches every listener.
    const denyJson = JSON.stringify(sent.backendDeny);
    const denyChanged = denyJson !== appliedDeny;
    appliedDeny = denyJson;
    const failed: ListenerFailure[] = [];
    const sentById = new Map(sent.listeners.map((l) => [l.id, l]));
    for (const id of failures.keys()) if (!sentById.has(id)) failures.delete(id);
    // A listener waiting for its port with the config it failed with keeps waiting; a new config is tried
    // at once instead, and a removed listener is given up.
    for (const [id, entry] of retrying) {
      if (sentById.get(id) === entry.l && !denyChanged) continue;
      stopRetrying(id);
      logger.info({ listener: id }, sentById.has(id) ? 'bind retry replaced by the new config' : 'bind retry dropped');
    }
    // In slices: building thousands of listeners (their server groups) held the event loop for seconds, so
    // the listeners already serving stalled and heartbeats went unsent. Nothing else changes listeners
    // meanwhile: bind retries wait in the same queue, and the cleanup waits for the apply's end.
    const slicer = new Slicer();
    // Each changed listener is built before anything moves; one that cannot be keeps what it had.
    const built = new Map<string, ListenerBuild>();
    const wanted = new Map<string, L7Listener>();
    for (const l of sent.listeners) {
      await slicer.pause();
      if (wanted.has(l.id)) {
        fail(failed, l.id, 'duplicate listener id');
        continue;
      }
      const same = (appliedConfigs.get(l.id) === l && listeners.has(l.id)) || retrying.get(l.id)?.l === l;
      if (same && !denyChanged) {
        wanted.set(l.id, l);
        continue;
      }
      try {
        built.set(l.id, build(l));
        wanted.set(l.id, l);
      } catch (err) {
        fail(failed, l.id, (err as Error).message);
        const previous = appliedConfigs.get(l.id);
        if (previous !== undefined && listeners.has(l.id)) wanted.set(l.id, previous);
      }
    }
    const snapshot: L7NodeSnapshot = { ...sent, listeners: [...wanted.values()] };
    await states.syncSticky(snapshot, wanted);
    const leaving: ListenerRuntime[] = [];
    for (const [id, rt] of listeners) {
      const next = wanted.get(id);
      if (next && (appliedConfigs.get(id) === next || rt.canKeepSockets(next))) continue;
      listeners.delete(id);
      appliedConfigs.delete(id);
      leaving.push(rt);
    }
    // Ports of removed or rebuilt listeners are released before anything binds; their requests drain.
    await Promise.all(leaving.map((rt) => rt.stopAccepting()));
    for (const rt of leaving) {
      // Its series stay while its requests drain, and go with the next cleanup after that.
      draining.add(rt.config.id);
      void rt.drain(drainMs).finally(() => {
        draining.delete(rt.config.id);
        pruneDue = true;
        scheduleCleanup();
      });
    }
    for (const l of snapshot.listeners) {
      await slicer.pause();
      // Only what was built above changes: not a listener kept as it runs (a delta carries unchanged ones as
      // the very same objects), still waiting for its bind with the same config, or refused.
      const next = built.get(l.id);
      if (next === undefined) continue;
      const existing = listeners.get(l.id);
      if (existing) {
        try {
          existing.update(next);
          appliedConfigs.set(l.id, l);
          failures.delete(l.id);
        } catch (err) {
          fail(failed, l.id, (err as Error).message);
        }
        continue;
      }
      let rt: ListenerRuntime;
      try {
        rt = new ListenerRuntime(next, deps, listenerOptions);
      } catch (err) {
        fail(failed, l.id, (err as Error).message);
        continue;
      }
      const reason = await bind(l, rt);
      if (reason !== null) {
        fail(failed, l.id, reason);
        retryBind(l, reason);
        continue;
      }
      serve(l, rt);
      logger.info({ listener: l.id, protocol: l.protocol, ...rt.ports() }, 'listener up');
    }
    states.retain(wanted);
    latest = snapshot;
    scheduleCleanup();
    version = snapshot.version;
    metrics.reloads.labels('applied').inc();
    return failed;
  }

  /** Listens: null once bound, else why not (named by transport, address:port and code; `rt` is closed). */
  async function bind(l: L7Listener, rt: ListenerRuntime): Promise<string | null> {
    try {
      await rt.listen();
      return null;
    } catch (err) {
      await rt.close(0);
      return bindFailureReason('tcp', err, l.bindAddress ?? '127.0.0.1', l.port);
    }
  }

  function serve(l: L7Listener, rt: ListenerRuntime): void {
    appliedConfigs.set(l.id, l);
    listeners.set(l.id, rt);
    failures.delete(l.id);
  }

  /**
   * Keeps trying to bind `l` until it binds or a config removes or changes it: whoever holds the port may
   * let go without the control plane sending anything.
   */
  function retryBind(l: L7Listener, reason: string): void {
    const entry = { l };
    retrying.set(l.id, entry);
    metrics.bindFailing.set(retrying.size);
    retries.schedule(l.id, reason, () => {
      // In the apply queue, so a try never interleaves with an apply (which may drop or replace it).
      const run = applying.then(() => tryBindAgain(entry));
      applying = run.catch(() => undefined);
      return run.catch((err) => `cannot bind: ${(err as Error).message}`);
    });
  }

  async function tryBindAgain(entry: { l: L7Listener }): Promise<string | null> {
    const { l } = entry;
    // Dropped or replaced by an apply while this try waited for the queue.
    if (retrying.get(l.id) !== entry) return null;
    const rt = new ListenerRuntime(build(l), deps, listenerOptions);
    const reason = await bind(l, rt);
    if (reason !== null) {
      metrics.bindRetries.labels('failed').inc();
      if (failures.get(l.id) !== reason) logger.warn({ listener: l.id, reason }, 'listener still cannot bind');
      failures.set(l.id, reason);
      return reason;
    }
    retrying.delete(l.id);
    metrics.bindFailing.set(retrying.size);
    metrics.bindRetries.labels('bound').inc();
    serve(l, rt);
    logger.info(
      { listener: l.id, protocol: l.protocol, ...rt.ports(), tries: retries.tries(l.id) },
      'listener bound after retry',
    );
    return null;
  }

  function stopRetrying(id: string): void {
    retries.cancel(id);
    retrying.delete(id);
    metrics.bindFailing.set(retrying.size);
  }

  return {
    metrics,
    currentFailures: () => [...failures].map(([listenerId, reason]) => ({ listenerId, reason })),
    trafficReports() {
      for (const rt of listeners.values()) rt.countBytes();
      // A listener the node no longer serves stops being reported (draining ones still count).
      metrics.traffic.retain(new Set([...listeners.keys(), ...draining]));
      return metrics.traffic.reports();
    },
    apply(snapshot) {
      const run = applying.then(() => applyNow(snapshot));
      applying = run.catch(() => undefined);
      return run;
    },
    ports: (id) => listeners.get(id)?.ports(),
    get version() {
      return version;
    },
    async close() {
      await applying;
      retries.cancelAll();
      retrying.clear();
      metrics.bindFailing.set(0);
      if (cleanupTimer) clearTimeout(cleanupTimer);
      states.detachAll();
      await Promise.all([...listeners.values()].map((l) => l.close(drainMs)));
      listeners.clear();
      await pools.close();
      upstream.close();
    },
  };
}
