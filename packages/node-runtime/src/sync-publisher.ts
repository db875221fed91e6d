import type { Redis } from 'ioredis';
import type { SyncLogger } from './session-sync-options.js';
import {
  ACTIVITY_FIELD,
  encodeActivity,
  hashField,
  STREAM_FIELD_DATA,
  STREAM_FIELD_ORIGIN,
  type WireEntry,
} from './sync-message.js';
import type { Scope } from './sync-scope.js';

export interface SyncPublisherOptions {
  /** `nodeId#instance`, written with every entry (see SessionSync.origin). */
  readonly origin: string;
  readonly now: () => number;
  readonly log: SyncLogger;
  /** The SessionSyncOptions of the same names, defaults applied. */
  readonly flushIntervalMs: number;
  readonly maxBatch: number;
  readonly maxInFlight: number;
  readonly maxPending: number;
  readonly streamMaxLen: number;
  /** The deployment's activity stream (see SessionSync), named at each flush: the prefix can still change. */
  readonly activityKey: () => string;
}

/**
 * Approximate length of the activity stream (with ACTIVITY_MAX_NAMED, at most a few tens of MB): a reader
 * that falls further behind misses notices, and its sweep reads what they named.
 */
const ACTIVITY_MAXLEN = 5_000;
/** The activity stream outlives the last writer by an hour. */
const ACTIVITY_TTL_MS = 3_600_000;

/**
 * The publishing half of session sync: entries wait per scope, are written in batches (one pipeline for
 * every scope with something waiting, at most `maxInFlight` at once) and never block forwarding: past
 * `maxPending`, or while Redis is away, they are dropped and counted unpublished (a resync republishes).
 */
export class SyncPublisher {
  private pendingCount = 0;
  /** Scopes with entries waiting: a flush visits these, not every scope of a node with thousands. */
  private readonly waiting = new Set<Scope>();
  private inFlight = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private flushSoon = false;
  private closed = false;

  constructor(
    private readonly cmd: Redis,
    private readonly o: SyncPublisherOptions,
  ) {}

  /** Entries queued and not yet written. */
  get pending(): number {
    return this.pendingCount;
  }

  enqueue(s: Scope, w: WireEntry): void {
    if (this.pendingCount >= this.o.maxPending) {
      s.m.unpublished.inc();
      return;
    }
    s.pending.push(w);
    this.waiting.add(s);
    this.pendingCount++;
    if (s.pending.length >= this.o.maxBatch) this.scheduleFlush(true);
    else this.scheduleFlush(false);
  }

  /** Forgets what a detached scope had waiting. */
  forget(s: Scope): void {
    this.pendingCount -= s.pending.length;
    s.pending = [];
    this.waiting.delete(s);
  }

  /** Stops scheduling writes (a flush already running completes). */
  close(): void {
    this.closed = true;
    clearTimeout(this.flushTimer);
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
      }, this.o.flushIntervalMs);
    }
  }

  /** Writes what is pending: per scope and batch one XADD, one HSET and one ZADD, all in one pipeline. */
  async flush(): Promise<void> {
    if (this.pendingCount === 0) return;
    if (this.cmd.status !== 'ready') {
      for (const s of this.waiting) this.dropPending(s);
      return;
    }
    if (this.inFlight >= this.o.maxInFlight) {
      this.scheduleFlush(false);
      return;
    }
    const p = this.cmd.pipeline();
    const sent: { s: Scope; n: number }[] = [];
    for (const s of this.waiting) {
      const batch = s.pending.splice(0, this.o.maxBatch);
      if (s.pending.length === 0) this.waiting.delete(s);
      this.pendingCount -= batch.length;
      sent.push({ s, n: batch.length });
      const hashArgs: string[] = [];
      const zArgs: (string | number)[] = [];
      let maxExp = 0;
      for (const w of batch) {
        const field = hashField(w[0], w[1]);
        const exp = w[4] + w[3];
        hashArgs.push(field, JSON.stringify([this.o.origin, ...w]));
        zArgs.push(exp, field);
        if (exp > maxExp) maxExp = exp;
      }
      if (maxExp > s.cleanupUntil) s.cleanupUntil = maxExp;
      p.xadd(
        s.stream,
        'MAXLEN',
        '~',
        this.o.streamMaxLen,
        '*',
        STREAM_FIELD_ORIGIN,
        this.o.origin,
        STREAM_FIELD_DATA,
        JSON.stringify(batch),
      );
      p.hset(s.hash, ...hashArgs);
      p.zadd(s.expiry, ...zArgs);
      // The keys outlive the longest entry by a minute, so an abandoned scope cleans itself up.
      if (maxExp - this.o.now() > s.keyTtlMs) s.keyTtlMs = maxExp - this.o.now();
      const ttl = Math.round(s.keyTtlMs + 60_000);
      p.pexpire(s.stream, ttl);
      p.pexpire(s.hash, ttl);
      p.pexpire(s.expiry, ttl);
    }
    // After the scopes' writes, in the same pipeline: a reader that sees the notice finds what it names.
    const activity = this.o.activityKey();
    p.xadd(activity, 'MAXLEN', '~', ACTIVITY_MAXLEN, '*', ACTIVITY_FIELD, encodeActivity(sent.map(({ s }) => s.id)));
    p.pexpire(activity, ACTIVITY_TTL_MS);
    this.inFlight++;
    try {
      const res = await p.exec();
      const failed = res?.find(([err]) => err !== null)?.[0];
      if (res === null || failed) throw failed ?? new Error('pipeline aborted');
      for (const { s, n } of sent) s.m.published.inc(n);
    } catch (err) {
      for (const { s, n } of sent) s.m.unpublished.inc(n);
      this.o.log.debug({ err }, 'session sync: publish failed');
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
    this.waiting.delete(s);
  }
}
