import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { SessionSyncOptions, SyncLogger } from './session-sync-options.js';
import { applyStored, applyStreamMessage } from './sync-apply.js';
import { decodeActivity, type WireEntry } from './sync-message.js';
import { SyncMetrics } from './sync-metrics.js';
import { SyncPublisher } from './sync-publisher.js';
import { cleanupExpired, type LoadedScope, loadScopes, syncConnections } from './sync-redis.js';
import {
  activityKey,
  Scope,
  type ScopeKeys,
  type SyncChannel,
  type SyncScope,
  type SyncTarget,
  scopeId,
  scopeKeys,
} from './sync-scope.js';

export type { SessionSyncOptions, SyncLogger } from './session-sync-options.js';
export type { SyncEntry, SyncKind } from './sync-message.js';
export type { SyncChannel, SyncScope, SyncTarget } from './sync-scope.js';

/**
 * Session sync over Redis, shared by the L4 and L7 nodes. Per scope (tenant + listener) three keys:
 * a stream of published batches (XADD MAXLEN ~), a hash of the latest entry per (kind, key) and a zset of
 * their expiry times. A node loads the hash when it attaches a scope (or after Redis was away) and then
 * follows the stream from the id it saw at load time, so nothing between the two is missed; duplicates are
 * harmless because applying an entry is idempotent. Publishing is batched per scope, pipelined and never
 * blocks forwarding: while Redis is down entries are counted as unpublished, and when it returns every
 * scope is reloaded and the node's live tables are republished in full.
 *
 * Following is driven by one more stream per deployment, the activity stream: each flush ends with a notice
 * naming the scopes it wrote to. A node blocks on that stream alone and then reads only the streams named,
 * so an entry costs the same on a node following 10 scopes as on one following 10,000 (a blocking read over
 * every stream sent and watched them all at each wake-up). Every `sweepMs` all streams are read as well:
 * that catches the entries of a node that writes no notices (an older version) and notices trimmed before
 * a slow reader saw them.
 */
/** Streams one read of due scopes names, at most. */
const READ_STREAMS = 500;
/** Messages read per stream at once; a stream that gave this many stays due. */
const READ_COUNT = 1000;
/** How much later than its load timeout a scope may be served, so the scopes of one apply go in few rounds. */
const READY_ROUND_MS = 100;
/** Scopes loaded by one script, at most. */
const LOAD_BATCH = 256;
/** Listeners a load's log line names; the rest are counted (each is named at debug). */
const LOGGED_LISTENERS = 10;

interface QueuedLoad {
  readonly s: Scope;
  done(err?: Error): void;
}

export class SessionSync {
  readonly metrics: SyncMetrics;
  readonly now: () => number;
  readonly refreshMs: number;
  /** `nodeId#instance`: ignores its own stream messages but learns from its previous incarnation's. */
  readonly origin: string;
  private prefix: string;
  private readonly prefixPinned: boolean;
  private prefixWarned = false;
  private readonly loadTimeoutMs: number;
  private readonly blockMs: number;
  private readonly sweepMs: number;
  private readonly cleanupIntervalMs: number;
  private readonly log: SyncLogger;
  private readonly cmd: Redis;
  private readonly reader: Redis;
  private readonly publisher: SyncPublisher;
  private readonly scopes = new Map<string, Scope>();
  private readonly byStream = new Map<string, Scope>();
  private readonly loadQueue: QueuedLoad[] = [];
  /** Scopes to read without waiting: named by a notice, just loaded, or left with more to read. */
  private readonly due = new Set<Scope>();
  /** The rest of a sweep, read after the due ones. */
  private readonly sweeping = new Set<Scope>();
  /** This node's place in the activity stream: taken before any scope loads (at connect, at a prefix change). */
  private activityId: string | undefined;
  private takingCursor = false;
  /** Scopes whose `ready` waits for their load, with when it stops waiting, in attach order. */
  private readyBy: { s: Scope; by: number }[] = [];
  private readyTimer: NodeJS.Timeout | undefined;
  /** When the last sweep began, on the monotonic clock (`now` is the entries' wall clock, and may be a test's). */
  private sweptAt = Number.NEGATIVE_INFINITY;
  private timers: NodeJS.Timeout[] = [];
  private started = false;
  private closed = false;
  private wasReady = false;
  private everReady = false;
  private resyncing: Promise<void> | undefined;
  private readLoop: Promise<void> | undefined;

  constructor(options: SessionSyncOptions) {
    this.prefix = options.prefix ?? 'slb:sync';
    this.prefixPinned = options.prefixPinned ?? false;
    this.origin = `${options.nodeId}#${randomBytes(4).toString('hex')}`;
    this.log = options.logger;
    this.now = options.now ?? Date.now;
    this.refreshMs = options.refreshMs ?? 5_000;
    this.loadTimeoutMs = options.loadTimeoutMs ?? 2_000;
    this.blockMs = options.blockMs ?? 1000;
    this.sweepMs = options.sweepMs ?? 5_000;
    this.cleanupIntervalMs = options.cleanupIntervalMs ?? 5_000;
    this.metrics = new SyncMetrics(options.registry, () => this.scopes.values());
    const redis = syncConnections(options.url, this.origin);
    this.cmd = redis.cmd;
    this.reader = redis.reader;
    this.publisher = new SyncPublisher(this.cmd, {
      origin: this.origin,
      now: this.now,
      log: this.log,
      flushIntervalMs: options.flushIntervalMs ?? 5,
      maxBatch: options.maxBatch ?? 1000,
      maxInFlight: options.maxInFlight ?? 4,
      maxPending: options.maxPending ?? 200_000,
      streamMaxLen: options.streamMaxLen ?? 10_000,
      activityKey: () => activityKey(this.prefix),
    });
    for (const r of [this.cmd, this.reader]) r.on('error', () => undefined); // state changes are logged below
    this.cmd.on('ready', () => this.onReady());
    this.cmd.on('close', () => this.onDown());
  }

  /**
   * Takes the deployment's prefix from a snapshot, before the snapshot's listeners attach. A prefix the
   * operator set wins; once scopes are attached the prefix stays (their streams are open) and a change is
   * logged, to take effect at the next start.
   */
  usePrefix(prefix: string | undefined): void {
    if (prefix === undefined || prefix === this.prefix || this.prefixPinned) return;
    if (this.scopes.size > 0) {
      if (!this.prefixWarned) {
        this.log.warn(
          { current: this.prefix, wanted: prefix },
          'session sync prefix changed; used from the next start',
        );
        this.prefixWarned = true;
      }
      return;
    }
    this.prefix = prefix;
    if (this.cmd.status === 'ready') this.takeActivityCursor();
  }

  /** The key prefix in use. */
  get keyPrefix(): string {
    return this.prefix;
  }

  /**
   * Starts publishing and applying for a scope (replacing an earlier channel of the same scope). The
   * channel's `ready` resolves once the scope's current entries are loaded, or after `loadTimeoutMs` if Redis
   * is slow or away (they are loaded when Redis answers): a caller that waits on it before serving is
   * bounded either way.
   */
  attach(scope: SyncScope, target: SyncTarget): SyncChannel {
    const id = scopeId(scope);
    this.scopes.get(id)?.detach();
    const s = new Scope(this, scope, target, this.prefix);
    this.scopes.set(id, s);
    this.byStream.set(s.stream, s);
    this.start();
    // Loaded now if Redis is up, else by the resync when it connects; served anyway after loadTimeoutMs.
    if (this.cmd.status === 'ready') this.loadOnce(s).catch(() => undefined);
    this.readyBy.push({ s, by: performance.now() + this.loadTimeoutMs });
    this.scheduleReadyCheck();
    return s;
  }

  /** Stops both connections; pending entries are flushed first when Redis is up. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.cmd.status === 'ready') await this.publisher.flush().catch(() => undefined);
    this.closed = true;
    this.publisher.close();
    for (const t of this.timers) clearInterval(t);
    clearTimeout(this.readyTimer);
    for (const { s } of this.readyBy.splice(0)) s.settle(s.following);
    this.cmd.disconnect();
    this.reader.disconnect();
    await this.readLoop;
  }

  /** Entries queued and not yet written. */
  get pending(): number {
    return this.publisher.pending;
  }

  /** The scope's Redis keys (for tests and tools). */
  keys(scope: SyncScope): ScopeKeys {
    return scopeKeys(this.prefix, scope);
  }

  detach(s: Scope): void {
    s.attached = false;
    s.following = false;
    s.settle(false);
    this.publisher.forget(s);
    this.due.delete(s);
    this.sweeping.delete(s);
    if (this.scopes.get(s.id) === s) this.scopes.delete(s.id);
    if (this.byStream.get(s.stream) === s) this.byStream.delete(s.stream);
  }

  enqueue(s: Scope, w: WireEntry): void {
    this.publisher.enqueue(s, w);
  }

  private start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.cmd.connect().catch(() => undefined);
    this.reader.connect().catch(() => undefined);
    this.readLoop = this.follow();
    const rotate = setInterval(() => {
      for (const s of this.scopes.values()) s.rotate();
    }, this.refreshMs);
    const cleanup = setInterval(() => void this.cleanup(), this.cleanupIntervalMs);
    // A load that failed while the connection stayed up (a timeout) is retried here, not only on reconnect:
    // only the scopes not loaded and not loading. (Treating it as a reconnect reloaded and republished every
    // scope, thousands on a big node, each time one new listener was still loading.)
    const retry = setInterval(() => {
      if (this.cmd.status !== 'ready') return;
      if (this.activityId === undefined) this.takeActivityCursor();
      if (this.resyncing !== undefined) return;
      for (const s of this.scopes.values()) {
        if (!s.following && s.loading === undefined) this.loadOnce(s).catch(() => undefined);
      }
    }, 1_000);
    for (const t of [rotate, cleanup, retry]) t.unref();
    this.timers.push(rotate, cleanup, retry);
  }

  /**
   * Settles, as served before loading, the scopes whose load timeout passed: one timer for all of them (in
   * attach order, so their deadlines are in order), not one each, and one log line per round of
   * READY_ROUND_MS.
   */
  private scheduleReadyCheck(): void {
    if (this.readyTimer !== undefined || this.readyBy.length === 0) return;
    const wait = Math.max(0, this.readyBy[0]!.by - performance.now()) + READY_ROUND_MS;
    this.readyTimer = setTimeout(() => {
      this.readyTimer = undefined;
      const now = performance.now();
      let due = 0;
      while (due < this.readyBy.length && this.readyBy[due]!.by <= now) due++;
      this.serveUnloaded(this.readyBy.splice(0, due).map(({ s }) => s));
      this.scheduleReadyCheck();
    }, wait);
  }

  /** Settles the scopes still waiting as served before their entries were loaded, in one log line. */
  private serveUnloaded(scopes: Scope[], err?: unknown): void {
    const late: string[] = [];
    for (const s of scopes) {
      if (!s.waiting) continue;
      if (s.attached && !this.closed) late.push(s.scope.listenerId);
      s.settle(false);
    }
    if (late.length === 0) return;
    this.log.warn(
      { scopes: late.length, listeners: late.slice(0, LOGGED_LISTENERS), ...(err === undefined ? {} : { err }) },
      'session sync: serving before entries are loaded',
    );
  }

  private onDown(): void {
    if (!this.wasReady) return;
    this.wasReady = false;
    this.metrics.redisUp.set(0);
    for (const s of this.scopes.values()) s.following = false;
    if (!this.closed) this.log.warn({}, 'session sync: Redis connection lost, forwarding with local tables');
  }

  private onReady(): void {
    const again = this.everReady;
    this.wasReady = true;
    this.everReady = true;
    this.metrics.redisUp.set(1);
    this.log.info(
      { resync: again },
      again ? 'session sync: Redis is back, resyncing' : 'session sync: Redis connected',
    );
    this.takeActivityCursor(); // sent before the loads below, on the same connection
    this.resyncing = this.resyncAll(again).finally(() => {
      this.resyncing = undefined;
    });
  }

  /**
   * Loads every scope (in batches, side by side), then (after an outage) republishes each loaded scope's
   * local tables in full. A scope that failed to load is retried by the retry timer.
   */
  private async resyncAll(republish: boolean): Promise<void> {
    if (this.resyncing !== undefined) await this.resyncing;
    let failed = 0;
    let firstErr: unknown;
    await Promise.all(
      [...this.scopes.values()].map(async (s) => {
        try {
          await this.loadOnce(s);
        } catch (err) {
          failed++;
          firstErr ??= err;
          return;
        }
        if (!republish || !s.attached) return;
        const now = this.now();
        for (const e of s.target.dump(now)) {
          this.enqueue(s, [e.kind, e.key, e.serverId, Math.max(1, Math.round(e.remainingMs)), now]);
        }
      }),
    );
    if (failed > 0)
      this.log.warn({ err: firstErr, failed }, 'session sync: resync failed for some listeners, retrying');
    if (republish) this.metrics.resyncs.inc();
  }

  /**
   * Loads a scope with the others asked for in the same turn of the event loop (see `loadQueued`); a retry
   * while one is in flight shares it.
   */
  private loadOnce(s: Scope): Promise<void> {
    s.loading ??= new Promise<void>((resolve, reject) => {
      this.loadQueue.push({ s, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (this.loadQueue.length === 1) setImmediate(() => this.loadQueued());
    }).finally(() => {
      s.loading = undefined;
    });
    return s.loading;
  }

  /**
   * One script per LOAD_BATCH scopes, not a transaction per scope: a node joining with thousands of
   * listeners otherwise wrote thousands of transactions, one socket write and one log line each.
   */
  private loadQueued(): void {
    while (this.loadQueue.length > 0) void this.loadBatch(this.loadQueue.splice(0, LOAD_BATCH));
  }

  /**
   * Reads each scope's last stream id and its hash in one script, applies the live entries, and follows
   * each stream from that id. A scope whose reads fail (a key of the wrong type) fails alone.
   */
  private async loadBatch(batch: QueuedLoad[]): Promise<void> {
    const started = this.now();
    const live = batch.filter((q) => q.s.attached);
    for (const q of batch) if (!q.s.attached) q.done();
    if (live.length === 0) return;
    let res: LoadedScope[];
    try {
      res = await loadScopes(
        this.cmd,
        live.map((q) => q.s),
      );
    } catch (err) {
      for (const q of live) q.done(err as Error);
      this.serveUnloaded(
        live.map((q) => q.s),
        err,
      );
      return;
    }
    const now = this.now();
    const total = { entries: 0, malformed: 0, failed: 0 };
    const loaded: string[] = [];
    const failed: Scope[] = [];
    for (const [i, { s, done }] of live.entries()) {
      const r = res[i]!;
      if (!r.ok) {
        total.failed++;
        failed.push(s);
        done(r.err);
        continue;
      }
      if (s.attached) {
        const { applied, malformed } = applyStored(r.values, this.origin, s.target, now);
        if (applied > 0) s.m.applied.inc(applied);
        if (malformed > 0) s.m.malformed.inc(malformed);
        s.lastId = r.lastId;
        s.following = true;
        s.settle(true);
        // A notice naming it may have been read while it loaded, and passed over.
        this.due.add(s);
        total.entries += applied;
        total.malformed += malformed;
        loaded.push(s.scope.listenerId);
        this.log.debug(
          { listener: s.scope.listenerId, entries: applied, malformed, from: s.lastId },
          'session sync: scope loaded',
        );
      }
      done();
    }
    // Retried by the retry timer; meanwhile served, as when Redis is slow.
    this.serveUnloaded(failed);
    if (loaded.length === 0) return;
    this.log.info(
      { scopes: loaded.length, ...total, ms: this.now() - started, listeners: loaded.slice(0, LOGGED_LISTENERS) },
      'session sync: entries loaded',
    );
  }

  /**
   * Takes this node's place in the activity stream: its last id. Every scope already following is read once
   * then, as notices before that place are not read.
   */
  private takeActivityCursor(): void {
    if (this.takingCursor) return;
    this.takingCursor = true;
    this.activityId = undefined;
    const key = activityKey(this.prefix);
    this.cmd
      .xrevrange(key, '+', '-', 'COUNT', 1)
      .then(
        (last) => {
          if (key !== activityKey(this.prefix)) return;
          this.activityId = last[0]?.[0] ?? '0-0';
          for (const s of this.scopes.values()) if (s.following) this.due.add(s);
        },
        () => undefined, // taken again by the retry timer
      )
      .finally(() => {
        this.takingCursor = false;
      });
  }

  /** The follow loop, on its own connection: the due scopes' streams, else a blocking read of the notices. */
  private async follow(): Promise<void> {
    while (!this.closed) {
      if (this.reader.status !== 'ready' || this.activityId === undefined) {
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      if (performance.now() - this.sweptAt >= this.sweepMs) {
        this.sweptAt = performance.now();
        for (const s of this.scopes.values()) if (s.following) this.sweeping.add(s);
      }
      try {
        if (this.due.size > 0) await this.readStreams(this.due);
        else if (this.sweeping.size === 0) await this.readActivity(this.activityId, this.blockFor());
        // Between two parts of a sweep, the notices: a stream they name is read before the sweep goes on. A
        // notice read that fails (the key holds something else) does not stop the sweep.
        else if (!(await this.readActivity(this.activityId, 0).catch(() => false)))
          await this.readStreams(this.sweeping);
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /** How long a wait for notices may block: blockMs, or until the next sweep. */
  private blockFor(): number {
    return Math.max(1, Math.min(this.blockMs, this.sweptAt + this.sweepMs - performance.now()));
  }

  /**
   * Reads the notices after `from`, waiting up to `blockMs` for one (0: not at all), and makes the scopes
   * they name due. True if it made any due.
   */
  private async readActivity(from: string, blockMs: number): Promise<boolean> {
    const key = activityKey(this.prefix);
    const res =
      blockMs > 0
        ? await this.reader.xread('COUNT', 1000, 'BLOCK', blockMs, 'STREAMS', key, from)
        : await this.reader.xread('COUNT', 1000, 'STREAMS', key, from);
    if (res === null || this.activityId !== from) return false; // the place was taken again meanwhile
    for (const [, messages] of res) {
      for (const [id, fields] of messages) {
        this.activityId = id;
        const named = decodeActivity(fields);
        const scopes = named === '*' ? this.scopes.values() : named.map((sid) => this.scopes.get(sid));
        for (const s of scopes) if (s?.following) this.due.add(s);
      }
    }
    return this.due.size > 0;
  }

  /**
   * Reads up to READ_STREAMS streams of `from` (the due scopes or the sweep) at once, without waiting; one
   * with more to read becomes due.
   */
  private async readStreams(from: Set<Scope>): Promise<void> {
    const scopes: Scope[] = [];
    for (const s of from) {
      from.delete(s);
      if (s.following) scopes.push(s);
      if (scopes.length === READ_STREAMS) break;
    }
    if (scopes.length === 0) return;
    this.metrics.streamReads.inc(scopes.length);
    let res: [string, [string, string[]][]][] | null;
    try {
      res = (await this.reader.xread(
        'COUNT',
        READ_COUNT,
        'STREAMS',
        ...scopes.map((s) => s.stream),
        ...scopes.map((s) => s.lastId),
      )) as [string, [string, string[]][]][] | null;
    } catch (err) {
      for (const s of scopes) from.add(s);
      throw err;
    }
    if (res === null) return;
    const now = this.now();
    for (const [stream, messages] of res) {
      const s = this.byStream.get(stream);
      if (s === undefined || !s.following) continue;
      for (const [id, fields] of messages) {
        s.lastId = id;
        const got = applyStreamMessage(fields, this.origin, s.target, now, (ms) =>
          this.metrics.lag.observe(Math.max(0, ms) / 1000),
        );
        if (got.malformed > 0) s.m.malformed.inc(got.malformed);
        if (got.applied > 0) s.m.applied.inc(got.applied);
      }
      if (messages.length === READ_COUNT) this.due.add(s);
    }
  }

  private async cleanup(): Promise<void> {
    if (this.cmd.status !== 'ready') return;
    const now = this.now();
    for (const s of this.scopes.values()) {
      // Each node expires what it published: a scope with nothing of ours left to expire costs no call,
      // which matters on a node with thousands of listeners and few flows.
      if (s.cleanupUntil === 0 || now > s.cleanupUntil + this.cleanupIntervalMs) continue;
      try {
        await cleanupExpired(this.cmd, s, now, 5_000);
      } catch {
        return;
      }
    }
  }
}
