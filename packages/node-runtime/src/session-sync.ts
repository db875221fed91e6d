import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Registry } from 'prom-client';
import {
  decodeBatch,
  decodeStored,
  hashField,
  STREAM_FIELD_DATA,
  STREAM_FIELD_ORIGIN,
  type StoredEntry,
  type SyncEntry,
  type SyncKind,
  toEntry,
  type WireEntry,
} from './sync-message.js';
import { SyncMetrics } from './sync-metrics.js';

export type { SyncEntry, SyncKind } from './sync-message.js';

/** The part of a pino logger the component uses. */
export interface SyncLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

/** Sync is scoped per tenant and listener: peers share entries only within one listener. */
export interface SyncScope {
  readonly tenantId: string;
  readonly listenerId: string;
}

/** What a node's tables offer the sync for one scope. */
export interface SyncTarget {
  /** Puts a peer's entry into the local tables; false if it could not be used (e.g. unknown server). */
  apply(entry: SyncEntry, now: number): boolean;
  /** Every live local entry, republished after Redis was away so peers (and a restarted Redis) catch up. */
  dump(now: number): Iterable<SyncEntry>;
  /** Entries per local table, for the table-size gauge. */
  sizes(): Readonly<Record<string, number>>;
}

export interface SessionSyncOptions {
  /** Redis URL, e.g. redis://127.0.0.1:6379. */
  readonly url: string;
  /**
   * Prefix of every key, so deployments and tests share a Redis without meeting. Default 'slb:sync' until
   * {@link SessionSync.usePrefix} gives the deployment's.
   */
  readonly prefix?: string;
  /** The prefix was set by the operator: the deployment's from the snapshot does not replace it. Default false. */
  readonly prefixPinned?: boolean;
  /** This node's id; its own messages are recognised by it (plus a per-process instance suffix). */
  readonly nodeId: string;
  readonly logger: SyncLogger;
  /** Where the `slb_session_sync_*` metrics are registered. */
  readonly registry: Registry;
  /** Entries are written at most this long after they are published, ms. Default 5. */
  readonly flushIntervalMs?: number;
  /** Entries per XADD/HSET/ZADD; a batch this large is flushed at once. Default 1000. */
  readonly maxBatch?: number;
  /** Pipelines in flight at once; above it entries wait (and batch up). Default 4. */
  readonly maxInFlight?: number;
  /** Entries waiting for Redis beyond which new ones are dropped and counted unpublished. Default 200 000. */
  readonly maxPending?: number;
  /**
   * A refresh of an unchanged entry is published at most once per this many ms (or a quarter of its
   * timeout, if shorter), so a busy flow does not flood Redis. Default 5 000.
   */
  readonly refreshMs?: number;
  /** Approximate stream length kept per scope (XADD MAXLEN ~); one stream entry is one batch. Default 10 000. */
  readonly streamMaxLen?: number;
  /** How long `attach` waits for the current entries before the caller serves anyway, ms. Default 2 000. */
  readonly loadTimeoutMs?: number;
  /**
   * XREAD BLOCK time; also how soon a newly attached scope joins the read, ms. Default 1000: an idle read
   * over thousands of streams is not free, and entries are delivered as soon as they arrive regardless.
   */
  readonly blockMs?: number;
  /** Expired entries are removed from Redis this often, ms. Default 5 000. */
  readonly cleanupIntervalMs?: number;
  /** Wall clock, ms. Entries carry it, so nodes' clocks should agree (NTP) to well under a timeout. */
  readonly now?: () => number;
}

/** A listener's handle on the sync. */
export interface SyncChannel {
  /** True once the scope's current entries are loaded; false if `loadTimeoutMs` passed first. */
  readonly ready: Promise<boolean>;
  /** Queues an entry the node created or refreshed; coalesced and batched. Never throws, never blocks. */
  publish(kind: SyncKind, key: string, serverId: string, remainingMs: number): void;
  /** Stops publishing and applying for this scope. */
  detach(): void;
}

// Removes up to ARGV[2] entries whose expiry (zset score) is <= ARGV[1] from the zset and the hash at once,
// so an entry refreshed meanwhile is never deleted from one and kept in the other.
const CLEANUP_LUA = `
local ks = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #ks > 0 then
  redis.call('ZREM', KEYS[1], unpack(ks))
  redis.call('HDEL', KEYS[2], unpack(ks))
end
return #ks`;

class Scope implements SyncChannel {
  readonly stream: string;
  readonly hash: string;
  readonly expiry: string;
  pending: WireEntry[] = [];
  /** Last stream id applied; the follow loop reads after it. */
  lastId = '0-0';
  /** Loaded and following the stream. */
  following = false;
  /** The load in flight, so a retry never starts a second one. */
  loading: Promise<void> | undefined;
  attached = true;
  ready: Promise<boolean> = Promise.resolve(false);
  /** Longest entry timeout seen; the keys' TTL follows it. */
  keyTtlMs = 0;
  /** Latest expiry this node published here: until then its cleanup has something to remove. */
  cleanupUntil = 0;
  // Two generations of recently published keys: O(1) coalescing without a per-entry timer.
  private recent = new Map<string, { sid: string; at: number }>();
  private older = new Map<string, { sid: string; at: number }>();
  readonly m: ReturnType<SyncMetrics['forScope']>;

  constructor(
    private readonly sync: SessionSync,
    readonly scope: SyncScope,
    readonly target: SyncTarget,
    prefix: string,
  ) {
    const base = `${prefix}:{${scope.tenantId}:${scope.listenerId}}`;
    this.stream = `${base}:stream`;
    this.hash = `${base}:entries`;
    this.expiry = `${base}:expiry`;
    this.m = sync.metrics.forScope(scope.listenerId);
  }

  publish(kind: SyncKind, key: string, serverId: string, remainingMs: number): void {
    if (!this.attached) return;
    const now = this.sync.now();
    const field = hashField(kind, key);
    const prev = this.recent.get(field) ?? this.older.get(field);
    if (prev !== undefined && prev.sid === serverId && now - prev.at < Math.min(this.sync.refreshMs, remainingMs / 4)) {
      this.m.coalesced.inc();
      return;
    }
    this.recent.set(field, { sid: serverId, at: now });
    this.sync.enqueue(this, [kind, key, serverId, Math.max(1, Math.round(remainingMs)), now]);
  }

  rotate(): void {
    this.older = this.recent;
    this.recent = new Map();
  }

  detach(): void {
    this.sync.detach(this);
  }
}

/**
 * Session sync over Redis, shared by the L4 and L7 nodes. Per scope (tenant + listener) three keys:
 * a stream of published batches (XADD MAXLEN ~), a hash of the latest entry per (kind, key) and a zset of
 * their expiry times. A node loads the hash when it attaches a scope (or after Redis was away) and then
 * follows the stream from the id it saw at load time, so nothing between the two is missed; duplicates are
 * harmless because applying an entry is idempotent. Publishing is batched per scope, pipelined and never
 * blocks forwarding: while Redis is down entries are counted as unpublished, and when it returns every
 * scope is reloaded and the node's live tables are republished in full.
 */
export class SessionSync {
  readonly metrics: SyncMetrics;
  readonly now: () => number;
  readonly refreshMs: number;
  /** `nodeId#instance`: ignores its own stream messages but learns from its previous incarnation's. */
  readonly origin: string;
  private prefix: string;
  private readonly prefixPinned: boolean;
  private prefixWarned = false;
  private readonly flushIntervalMs: number;
  private readonly maxBatch: number;
  private readonly maxInFlight: number;
  private readonly maxPending: number;
  private readonly streamMaxLen: number;
  private readonly loadTimeoutMs: number;
  private readonly blockMs: number;
  private readonly cleanupIntervalMs: number;
  private readonly log: SyncLogger;
  private readonly cmd: Redis;
  private readonly reader: Redis;
  private readonly scopes = new Map<string, Scope>();
  private readonly byStream = new Map<string, Scope>();
  private pendingCount = 0;
  private inFlight = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private flushSoon = false;
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
    this.flushIntervalMs = options.flushIntervalMs ?? 5;
    this.maxBatch = options.maxBatch ?? 1000;
    this.maxInFlight = options.maxInFlight ?? 4;
    this.maxPending = options.maxPending ?? 200_000;
    this.refreshMs = options.refreshMs ?? 5_000;
    this.streamMaxLen = options.streamMaxLen ?? 10_000;
    this.loadTimeoutMs = options.loadTimeoutMs ?? 2_000;
    this.blockMs = options.blockMs ?? 1000;
    this.cleanupIntervalMs = options.cleanupIntervalMs ?? 5_000;
    this.metrics = new SyncMetrics(options.registry, () => this.scopes.values());
    // Fail fast while Redis is away (no offline queue, no resend): forwarding never waits on Redis, and a
    // reconnect is followed by a full resync instead of replaying stale commands.
    const common = {
      lazyConnect: true,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 1_000,
      retryStrategy: (n: number) => Math.min(50 * 2 ** Math.min(n, 5), 1_000),
    };
    this.cmd = new Redis(options.url, { ...common, commandTimeout: 5_000, connectionName: `${this.origin}:cmd` });
    this.reader = new Redis(options.url, { ...common, connectionName: `${this.origin}:read` });
    this.cmd.defineCommand('syncCleanup', { numberOfKeys: 2, lua: CLEANUP_LUA });
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
    const id = `${scope.tenantId}:${scope.listenerId}`;
    this.scopes.get(id)?.detach();
    const s = new Scope(this, scope, target, this.prefix);
    this.scopes.set(id, s);
    this.byStream.set(s.stream, s);
    this.start();
    const loaded = this.cmd.status === 'ready' ? this.loadOnce(s) : this.waitLoaded(s);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((r) => {
      timer = setTimeout(r, this.loadTimeoutMs);
    });
    s.ready = Promise.race([loaded.catch(() => undefined), timeout]).then(() => {
      clearTimeout(timer);
      if (!s.following && s.attached) {
        this.log.warn({ listener: scope.listenerId }, 'session sync: serving before entries are loaded');
      }
      return s.following;
    });
    return s;
  }

  /** Stops both connections; pending entries are flushed first when Redis is up. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.cmd.status === 'ready') await this.flush().catch(() => undefined);
    this.closed = true;
    clearTimeout(this.flushTimer);
    for (const t of this.timers) clearInterval(t);
    this.cmd.disconnect();
    this.reader.disconnect();
    await this.readLoop;
  }

  /** Entries queued and not yet written. */
  get pending(): number {
    return this.pendingCount;
  }

  /** The scope's Redis keys (for tests and tools). */
  keys(scope: SyncScope): { stream: string; hash: string; expiry: string } {
    const base = `${this.prefix}:{${scope.tenantId}:${scope.listenerId}}`;
    return { stream: `${base}:stream`, hash: `${base}:entries`, expiry: `${base}:expiry` };
  }

  detach(s: Scope): void {
    s.attached = false;
    s.following = false;
    this.pendingCount -= s.pending.length;
    s.pending = [];
    const id = `${s.scope.tenantId}:${s.scope.listenerId}`;
    if (this.scopes.get(id) === s) this.scopes.delete(id);
    if (this.byStream.get(s.stream) === s) this.byStream.delete(s.stream);
  }

  enqueue(s: Scope, w: WireEntry): void {
    if (this.pendingCount >= this.maxPending) {
      s.m.unpublished.inc();
      return;
    }
    s.pending.push(w);
    this.pendingCount++;
    if (s.pending.length >= this.maxBatch) this.scheduleFlush(true);
    else this.scheduleFlush(false);
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
      if (this.cmd.status !== 'ready' || this.resyncing !== undefined) return;
      for (const s of this.scopes.values()) {
        if (!s.following && s.loading === undefined) this.loadOnce(s).catch(() => undefined);
      }
    }, 1_000);
    for (const t of [rotate, cleanup, retry]) t.unref();
    this.timers.push(rotate, cleanup, retry);
  }

  private waitLoaded(s: Scope): Promise<void> {
    return new Promise((resolve) => {
      const check = setInterval(() => {
        if (this.closed || s.following || !s.attached) {
          clearInterval(check);
          resolve();
        }
      }, 20);
      check.unref();
    });
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
    this.resyncing = this.resyncAll(again).finally(() => {
      this.resyncing = undefined;
    });
  }

  /** Loads every scope, then (after an outage) republishes the local tables in full. */
  private async resyncAll(republish: boolean): Promise<void> {
    if (this.resyncing !== undefined) await this.resyncing;
    for (const s of [...this.scopes.values()]) {
      try {
        await this.loadOnce(s);
        if (republish) {
          const now = this.now();
          for (const e of s.target.dump(now)) {
            this.enqueue(s, [e.kind, e.key, e.serverId, Math.max(1, Math.round(e.remainingMs)), now]);
          }
        }
      } catch (err) {
        this.log.warn({ err, listener: s.scope.listenerId }, 'session sync: resync failed, will retry on reconnect');
        return;
      }
    }
    if (republish) this.metrics.resyncs.inc();
  }

  /**
   * Reads the stream's last id and the hash in one transaction, applies the live entries, and follows the
   * stream from that id.
   */
  private loadOnce(s: Scope): Promise<void> {
    s.loading ??= this.load(s).finally(() => {
      s.loading = undefined;
    });
    return s.loading;
  }

  private async load(s: Scope): Promise<void> {
    const started = this.now();
    const res = await this.cmd.multi().xrevrange(s.stream, '+', '-', 'COUNT', 1).hgetall(s.hash).exec();
    const failed = res === null ? new Error('transaction aborted') : (res[0]?.[0] ?? res[1]?.[0]);
    if (failed || res === null) throw failed ?? new Error('transaction aborted');
    if (!s.attached) return;
    const last = res[0]![1] as [string, string[]][];
    const all = res[1]![1] as Record<string, string>;
    const now = this.now();
    let applied = 0;
    let malformed = 0;
    for (const text of Object.values(all)) {
      const d = decodeStored(text);
      if (!d.ok) {
        malformed++;
        continue;
      }
      const [origin, ...wire] = d.value as StoredEntry;
      if (origin === this.origin) continue;
      const e = toEntry(wire as WireEntry, now);
      if (e !== undefined && s.target.apply(e, now)) applied++;
    }
    s.m.applied.inc(applied);
    if (malformed > 0) s.m.malformed.inc(malformed);
    s.lastId = last[0]?.[0] ?? '0-0';
    s.following = true;
    this.log.info(
      { listener: s.scope.listenerId, entries: applied, malformed, ms: this.now() - started, from: s.lastId },
      'session sync: entries loaded',
    );
  }

  /** The follow loop: one blocking XREAD over every loaded scope, on its own connection. */
  private async follow(): Promise<void> {
    while (!this.closed) {
      const scopes = [...this.scopes.values()].filter((s) => s.following);
      if (this.reader.status !== 'ready' || scopes.length === 0) {
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      let res: [string, [string, string[]][]][] | null;
      try {
        res = (await this.reader.xread(
          'COUNT',
          1000,
          'BLOCK',
          this.blockMs,
          'STREAMS',
          ...scopes.map((s) => s.stream),
          ...scopes.map((s) => s.lastId),
        )) as [string, [string, string[]][]][] | null;
      } catch {
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      if (res === null) continue;
      const now = this.now();
      for (const [stream, messages] of res) {
        const s = this.byStream.get(stream);
        if (s === undefined || !s.following) continue;
        for (const [id, fields] of messages) {
          s.lastId = id;
          this.applyMessage(s, fields, now);
        }
      }
    }
  }

  private applyMessage(s: Scope, fields: string[], now: number): void {
    let origin: string | undefined;
    let data: string | undefined;
    for (let i = 0; i + 1 < fields.length; i += 2) {
      if (fields[i] === STREAM_FIELD_ORIGIN) origin = fields[i + 1];
      else if (fields[i] === STREAM_FIELD_DATA) data = fields[i + 1];
    }
    if (origin === undefined || data === undefined) {
      s.m.malformed.inc();
      return;
    }
    if (origin === this.origin) return;
    const { entries, malformed } = decodeBatch(data);
    if (malformed > 0) s.m.malformed.inc(malformed);
    let applied = 0;
    for (const w of entries) {
      const e = toEntry(w, now);
      if (e === undefined || !s.target.apply(e, now)) continue;
      applied++;
      this.metrics.lag.observe(Math.max(0, now - w[4]) / 1000);
    }
    if (applied > 0) s.m.applied.inc(applied);
  }

  private scheduleFlush(soon: boolean): void {
    if (this.closed) return;
    if (soon && !this.flushSoon) {
      this.flushSoon = true;
      setImmediate(() => {
        this.flushSoon = false;
        void this.flush();
      });
    }
    if (this.flushTimer === undefined) {
      this.flushTimer = setTimeout(() => {
        this.flushTimer = undefined;
        void this.flush();
      }, this.flushIntervalMs);
    }
  }

  /** Writes what is pending: per scope and batch one XADD, one HSET and one ZADD, all in one pipeline. */
  private async flush(): Promise<void> {
    if (this.pendingCount === 0) return;
    if (this.cmd.status !== 'ready') {
      for (const s of this.scopes.values()) this.dropPending(s);
      return;
    }
    if (this.inFlight >= this.maxInFlight) {
      this.scheduleFlush(false);
      return;
    }
    const p = this.cmd.pipeline();
    const sent: { s: Scope; n: number }[] = [];
    for (const s of this.scopes.values()) {
      if (s.pending.length === 0) continue;
      const batch = s.pending.splice(0, this.maxBatch);
      this.pendingCount -= batch.length;
      sent.push({ s, n: batch.length });
      const hashArgs: string[] = [];
      const zArgs: (string | number)[] = [];
      let maxExp = 0;
      for (const w of batch) {
        const field = hashField(w[0], w[1]);
        const exp = w[4] + w[3];
        hashArgs.push(field, JSON.stringify([this.origin, ...w]));
        zArgs.push(exp, field);
        if (exp > maxExp) maxExp = exp;
      }
      if (maxExp > s.cleanupUntil) s.cleanupUntil = maxExp;
      p.xadd(
        s.stream,
        'MAXLEN',
        '~',
        this.streamMaxLen,
        '*',
        STREAM_FIELD_ORIGIN,
        this.origin,
        STREAM_FIELD_DATA,
        JSON.stringify(batch),
      );
      p.hset(s.hash, ...hashArgs);
      p.zadd(s.expiry, ...zArgs);
      // The keys outlive the longest entry by a minute, so an abandoned scope cleans itself up.
      if (maxExp - this.now() > s.keyTtlMs) s.keyTtlMs = maxExp - this.now();
      const ttl = Math.round(s.keyTtlMs + 60_000);
      p.pexpire(s.stream, ttl);
      p.pexpire(s.hash, ttl);
      p.pexpire(s.expiry, ttl);
    }
    this.inFlight++;
    try {
      const res = await p.exec();
      const failed = res?.find(([err]) => err !== null)?.[0];
      if (res === null || failed) throw failed ?? new Error('pipeline aborted');
      for (const { s, n } of sent) s.m.published.inc(n);
    } catch (err) {
      for (const { s, n } of sent) s.m.unpublished.inc(n);
      this.log.debug({ err }, 'session sync: publish failed');
    } finally {
      this.inFlight--;
    }
    if (this.pendingCount > 0) this.scheduleFlush(true);
  }

  private dropPending(s: Scope): void {
    if (s.pending.length === 0) return;
    s.m.unpublished.inc(s.pending.length);
    this.pendingCount -= s.pending.length;
    s.pending = [];
  }

  private async cleanup(): Promise<void> {
    if (this.cmd.status !== 'ready') return;
    const now = this.now();
    for (const s of this.scopes.values()) {
      // Each node expires what it published: a scope with nothing of ours left to expire costs no call,
      // which matters on a node with thousands of listeners and few flows.
      if (s.cleanupUntil === 0 || now > s.cleanupUntil + this.cleanupIntervalMs) continue;
      try {
        await (
          this.cmd as unknown as { syncCleanup(z: string, h: string, now: number, n: number): Promise<number> }
        ).syncCleanup(s.expiry, s.hash, now, 5_000);
      } catch {
        return;
      }
    }
  }
}

/** The node env that configures session sync (part of NodeEnvProperties). */
export interface SessionSyncEnv {
  readonly SLB_SESSION_SYNC_REDIS_URL?: string;
  readonly REDIS_URL: string;
  readonly SLB_SESSION_SYNC_PREFIX?: string;
}

/**
 * A node's session sync from its env, or undefined when turned off. Redis is dialled only once a listener
 * turns sync on; until then the node forwards with local tables.
 */
export function sessionSyncFromEnv(
  env: SessionSyncEnv,
  nodeId: string,
  logger: SyncLogger & { child(bindings: object): SyncLogger },
  registry: Registry,
): SessionSync | undefined {
  const url = env.SLB_SESSION_SYNC_REDIS_URL ?? env.REDIS_URL;
  if (url === 'off') return undefined;
  return new SessionSync({
    url,
    prefix: env.SLB_SESSION_SYNC_PREFIX,
    prefixPinned: env.SLB_SESSION_SYNC_PREFIX !== undefined,
    nodeId,
    logger: logger.child({ component: 'session-sync' }),
    registry,
  });
}
