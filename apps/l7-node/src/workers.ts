import cluster, { type Worker } from 'node:cluster';
import type { L7Listener, L7NodeSnapshot, ListenerFailure, ListenerTrafficReport, NodeLoadReport } from '@slb/model';
import { applyListenerDelta, type SnapshotChange, sumReports } from '@slb/node-runtime';
import type { Logger } from 'pino';

// One L7 node as several processes, one per core (SLB_L7_WORKERS). The primary holds what is the node's
// alone: the control channel (or the config file), the saved snapshot and the metrics port. Workers serve:
// each applies every config the primary applies, and the primary answers the controller only once all of
// them did. Listening sockets are shared through node:cluster, which hands each new connection to the
// next worker in turn (round robin), so load spreads evenly even when a few clients open many requests.

/** Primary → worker. */
export type ToWorker =
  | { type: 'slb:snapshot'; id: number; snapshot: L7NodeSnapshot }
  | {
      type: 'slb:delta';
      id: number;
      fromVersion: number;
      version: number;
      generatedAt: string;
      upsert: L7Listener[];
      remove: string[];
    }
  | { type: 'slb:shutdown' };

/** Worker → primary. */
export type FromWorker =
  | { type: 'slb:ready' }
  | {
      type: 'slb:applied';
      id: number;
      version: number;
      error?: string;
      failed?: ListenerFailure[];
      /** The worker's listener failures after this apply, so the ack that follows is not a second behind. */
      current?: ListenerFailure[];
    }
  /** Each second: the worker's load and its listener failures now (binds being retried included). */
  | { type: 'slb:load'; load: NodeLoadReport; failed?: ListenerFailure[]; traffic?: ListenerTrafficReport[] };

interface WorkerState {
  readonly worker: Worker;
  ready: boolean;
  /** The version this worker confirmed last (a delta needs it as its base). */
  version: number | null;
  load: NodeLoadReport;
  /** The worker's listener failures as of its last load report. */
  failed: ListenerFailure[];
  /** The worker's traffic counters as of its last load report. */
  traffic: ListenerTrafficReport[];
}

const ZERO_LOAD: NodeLoadReport = { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 };

/** The primary's side: forks, configures and replaces workers. */
export class WorkerFleet {
  private readonly workers = new Map<number, WorkerState>();
  private current: L7NodeSnapshot | null = null;
  private nextId = 1;
  private readonly waiting = new Map<
    number,
    { pending: Set<number>; errors: string[]; failed: Map<string, string>; done: () => void }
  >();
  private stopping = false;
  /**
   * The last counters of workers that exited, per listener: the node's counters are cumulative since it
   * started, so a worker's death must not make them go backwards (the API would take that for a restart).
   */
  private readonly retired = new Map<string, ListenerTrafficReport>();

  constructor(
    private readonly count: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    for (let i = 0; i < this.count; i++) this.fork();
  }

  /** Resolves once every worker started has said it is ready (replacements included). */
  async whenReady(): Promise<void> {
    while (this.readyCount < this.count) await new Promise((r) => setTimeout(r, 20));
  }

  /**
   * Applies on every ready worker; rejects with the workers' reasons if any refused. Resolves with the
   * listeners any worker could not build (the node's ack names them).
   */
  async apply(snapshot: L7NodeSnapshot, change?: SnapshotChange): Promise<ListenerFailure[]> {
    const base = this.current;
    this.current = snapshot;
    const id = this.nextId++;
    const ready = [...this.workers.values()].filter((w) => w.ready);
    if (ready.length === 0) return []; // each worker gets the current config once it is ready
    const entry = {
      pending: new Set(ready.map((w) => w.worker.id)),
      errors: [] as string[],
      failed: new Map<string, string>(),
      done: () => {},
    };
    const finished = new Promise<void>((resolve) => {
      entry.done = resolve;
    });
    this.waiting.set(id, entry);
    for (const w of ready) {
      // A worker that confirmed the previous config gets the delta (a few listeners); any other, the whole.
      if (change !== undefined && base !== null && w.version === base.version)
        this.send(w, {
          type: 'slb:delta',
          id,
          fromVersion: base.version,
          version: snapshot.version,
          generatedAt: snapshot.generatedAt,
          upsert: change.upsert as L7Listener[],
          remove: [...change.remove],
        });
      else this.send(w, { type: 'slb:snapshot', id, snapshot });
    }
    await finished;
    this.waiting.delete(id);
    if (entry.errors.length > 0) throw new Error(entry.errors.join('; '));
    return [...entry.failed].map(([listenerId, reason]) => ({ listenerId, reason }));
  }

  /** The node's load: the sum of the workers' last reports. */
  load(): NodeLoadReport {
    const sum = { ...ZERO_LOAD };
    for (const w of this.workers.values()) {
      sum.activeConnections += w.load.activeConnections;
      sum.newConnectionsPerSecond += w.load.newConnectionsPerSecond;
      sum.requestsPerSecond += w.load.requestsPerSecond;
    }
    return sum;
  }

  /** The node's traffic counters: the workers' last reports summed, with those of workers that exited. */
  traffic(): ListenerTrafficReport[] {
    const sum = new Map<string, ListenerTrafficReport>();
    for (const w of this.workers.values()) sumReports(sum, w.traffic);
    // Listeners no worker serves any more are forgotten, their exited workers' share with them.
    for (const id of this.retired.keys()) if (!sum.has(id)) this.retired.delete(id);
    sumReports(sum, this.retired.values(), false);
    return [...sum.values()];
  }

  /**
   * The node's listener failures now: any worker's (they apply the same configs, so they mostly agree; a
   * listener one worker cannot serve is one the node does not serve as sent). Up to a second old.
   */
  currentFailures(): ListenerFailure[] {
    const all = new Map<string, string>();
    for (const w of this.workers.values()) for (const f of w.failed) all.set(f.listenerId, f.reason);
    return [...all].map(([listenerId, reason]) => ({ listenerId, reason }));
  }

  get readyCount(): number {
    return [...this.workers.values()].filter((w) => w.ready).length;
  }

  /** Asks every worker to drain and exit; kills what is left after `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    const exits = [...this.workers.values()].map(
      (w) => new Promise<void>((resolve) => (w.worker.isDead() ? resolve() : w.worker.once('exit', () => resolve()))),
    );
    for (const w of this.workers.values()) this.send(w, { type: 'slb:shutdown' });
    const timer = setTimeout(() => {
      for (const w of this.workers.values()) if (!w.worker.isDead()) w.worker.process.kill('SIGKILL');
    }, graceMs);
    await Promise.all(exits);
    clearTimeout(timer);
  }

  /** Consecutive workers that died young: their replacements start after a growing delay. */
  private crashes = 0;

  private fork(): void {
    const forkedAt = Date.now();
    const worker = cluster.fork();
    const state: WorkerState = { worker, ready: false, version: null, load: ZERO_LOAD, failed: [], traffic: [] };
    this.workers.set(worker.id, state);
    worker.on('message', (m: FromWorker) => this.onMessage(state, m));
    worker.on('exit', (code, signal) => {
      this.workers.delete(worker.id);
      sumReports(this.retired, state.traffic, false);
      this.settleFor(worker.id, null);
      if (this.stopping) return;
      // A worker that died takes only its own connections: its siblings keep serving, and a new one starts
      // from the current config.
      // A worker that cannot start (a bad build, no memory) must not turn into a fork loop.
      this.crashes = Date.now() - forkedAt < 5000 ? this.crashes + 1 : 0;
      const delay = Math.min(5000, this.crashes === 0 ? 0 : 100 * 2 ** this.crashes);
      this.logger.error({ worker: worker.process.pid, code, signal, delay }, 'L7 worker exited; starting another');
      setTimeout(() => {
        if (!this.stopping) this.fork();
      }, delay).unref();
    });
  }

  private onMessage(w: WorkerState, m: FromWorker): void {
    if (m.type === 'slb:ready') {
      w.ready = true;
      if (this.current !== null) {
        // Not waited on by apply(): the node already acked this config; the worker serves once it applied it.
        this.send(w, { type: 'slb:snapshot', id: 0, snapshot: this.current });
      }
    } else if (m.type === 'slb:applied') {
      w.version = m.error === undefined ? m.version : null;
      if (m.current !== undefined) w.failed = m.current;
      if (m.error !== undefined && m.id === 0)
        this.logger.error({ worker: w.worker.process.pid, reason: m.error }, 'L7 worker refused the current config');
      this.settleFor(w.worker.id, m.id, m.error, m.failed);
    } else if (m.type === 'slb:load') {
      w.load = m.load;
      w.failed = m.failed ?? [];
      w.traffic = m.traffic ?? [];
    }
  }

  /** Marks one worker done with apply `id` (or with every pending apply when it died: `id` null). */
  private settleFor(workerId: number, id: number | null, error?: string, failed: ListenerFailure[] = []): void {
    for (const [applyId, entry] of this.waiting) {
      if (id !== null && applyId !== id) continue;
      if (!entry.pending.delete(workerId)) continue;
      if (error !== undefined) entry.errors.push(error);
      for (const f of failed) entry.failed.set(f.listenerId, f.reason);
      if (entry.pending.size === 0) entry.done();
    }
  }

  private send(w: WorkerState, message: ToWorker): void {
    if (w.worker.isConnected()) w.worker.send(message);
  }
}

/** What a worker serves with. */
export interface WorkerApp {
  /** Resolves with the listeners it could not build (the worker logs and counts them too). */
  apply(snapshot: L7NodeSnapshot): Promise<ListenerFailure[]>;
  load(): NodeLoadReport;
  /** Its listener failures now, reported with the load. Default: none reported. */
  currentFailures?(): ListenerFailure[];
  /** Its traffic counters now, reported with the load. Default: none reported. */
  trafficReports?(): ListenerTrafficReport[];
}

/** A worker's line to the primary. Default: the cluster IPC channel of this process. */
export interface WorkerChannel {
  onMessage(handler: (m: ToWorker) => void): void;
  send(m: FromWorker): void;
}

const ipcChannel: WorkerChannel = {
  onMessage: (handler) => process.on('message', handler),
  send: (m) => {
    if (process.connected) process.send?.(m);
  },
};

/** The worker's side: applies what the primary sends, reports its load each second, drains on request. */
export function runWorker(
  app: WorkerApp,
  logger: Logger,
  onShutdown: () => Promise<void>,
  channel: WorkerChannel = ipcChannel,
): void {
  let current: L7NodeSnapshot | null = null;
  let queue = Promise.resolve();
  const reply = (m: FromWorker) => channel.send(m);
  /** The config a message asks for; null when it is a delta from a version this worker does not have. */
  const nextConfig = (m: Exclude<ToWorker, { type: 'slb:shutdown' }>): L7NodeSnapshot | null => {
    if (m.type === 'slb:snapshot') return m.snapshot;
    if (current === null || current.version !== m.fromVersion) return null;
    return {
      ...current,
      version: m.version,
      generatedAt: m.generatedAt,
      listeners: applyListenerDelta(current.listeners, m.upsert, m.remove),
    };
  };
  channel.onMessage((m) => {
    if (m.type === 'slb:shutdown') {
      void queue.then(onShutdown);
      return;
    }
    // Every message is answered, an error included, and the queue never stays rejected: a step that threw
    // would leave the primary waiting for this worker and skip every later config.
    queue = queue
      .then(async () => {
        const version = m.type === 'slb:snapshot' ? m.snapshot.version : m.version;
        try {
          const next = nextConfig(m);
          if (next === null) {
            reply({ type: 'slb:applied', id: m.id, version, error: 'worker out of step with the primary' });
            return;
          }
          const failed = await app.apply(next);
          current = next;
          const now = app.currentFailures?.();
          reply({
            type: 'slb:applied',
            id: m.id,
            version: next.version,
            ...(failed.length > 0 ? { failed } : {}),
            ...(now === undefined ? {} : { current: now }),
          });
        } catch (err) {
          const reason = (err as Error).message || String(err);
          logger.warn({ version, reason }, 'worker could not apply the config');
          reply({ type: 'slb:applied', id: m.id, version, error: reason });
        }
      })
      .catch((err: Error) => logger.error({ err: err.message }, 'worker could not answer the primary'));
  });
  const ticker = setInterval(() => {
    const failed = app.currentFailures?.();
    const traffic = app.trafficReports?.();
    reply({
      type: 'slb:load',
      load: app.load(),
      ...(failed === undefined ? {} : { failed }),
      ...(traffic === undefined ? {} : { traffic }),
    });
  }, 1000);
  ticker.unref();
  reply({ type: 'slb:ready' });
}
