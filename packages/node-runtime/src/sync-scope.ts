import { hashField, type SyncEntry, type SyncKind, type WireEntry } from './sync-message.js';
import type { SyncMetrics } from './sync-metrics.js';

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

/** A listener's handle on the sync. */
export interface SyncChannel {
  /** True once the scope's current entries are loaded; false if `loadTimeoutMs` passed first. */
  readonly ready: Promise<boolean>;
  /** Queues an entry the node created or refreshed; coalesced and batched. Never throws, never blocks. */
  publish(kind: SyncKind, key: string, serverId: string, remainingMs: number): void;
  /** Stops publishing and applying for this scope. */
  detach(): void;
}

/** A scope's name within a deployment: its key in a node's table of scopes and in activity notices. */
export function scopeId(scope: SyncScope): string {
  return `${scope.tenantId}:${scope.listenerId}`;
}

/** The deployment's activity stream under `prefix` (see SessionSync). */
export function activityKey(prefix: string): string {
  return `${prefix}:activity`;
}

/** A scope's three Redis keys (see SessionSync). */
export interface ScopeKeys {
  readonly stream: string;
  readonly hash: string;
  readonly expiry: string;
}

/** The keys of a scope under `prefix`; the braces keep them in one Redis Cluster slot. */
export function scopeKeys(prefix: string, scope: SyncScope): ScopeKeys {
  const base = `${prefix}:{${scope.tenantId}:${scope.listenerId}}`;
  return { stream: `${base}:stream`, hash: `${base}:entries`, expiry: `${base}:expiry` };
}

/** What a scope needs of the sync that owns it. */
export interface ScopeHost {
  readonly metrics: SyncMetrics;
  readonly refreshMs: number;
  now(): number;
  enqueue(s: Scope, w: WireEntry): void;
  detach(s: Scope): void;
}

/** One attached scope: its keys, its place in the stream, and what it has waiting to be published. */
export class Scope implements SyncChannel, ScopeKeys {
  readonly id: string;
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
  readonly ready: Promise<boolean>;
  private settleReady: ((loaded: boolean) => void) | undefined;
  /** Longest entry timeout seen; the keys' TTL follows it. */
  keyTtlMs = 0;
  /** Latest expiry this node published here: until then its cleanup has something to remove. */
  cleanupUntil = 0;
  // Two generations of recently published keys: O(1) coalescing without a per-entry timer. Made by the first
  // publish: most scopes of a node with thousands of listeners never publish.
  private recent: Map<string, { sid: string; at: number }> | undefined;
  private older: Map<string, { sid: string; at: number }> | undefined;
  readonly m: ReturnType<SyncMetrics['forScope']>;

  constructor(
    private readonly sync: ScopeHost,
    readonly scope: SyncScope,
    readonly target: SyncTarget,
    prefix: string,
  ) {
    this.ready = new Promise((resolve) => {
      this.settleReady = resolve;
    });
    this.id = scopeId(scope);
    const keys = scopeKeys(prefix, scope);
    this.stream = keys.stream;
    this.hash = keys.hash;
    this.expiry = keys.expiry;
    this.m = sync.metrics.forScope(scope.listenerId);
  }

  publish(kind: SyncKind, key: string, serverId: string, remainingMs: number): void {
    if (!this.attached) return;
    const now = this.sync.now();
    const field = hashField(kind, key);
    const prev = this.recent?.get(field) ?? this.older?.get(field);
    if (prev !== undefined && prev.sid === serverId && now - prev.at < Math.min(this.sync.refreshMs, remainingMs / 4)) {
      this.m.coalesced.inc();
      return;
    }
    this.recent ??= new Map();
    this.recent.set(field, { sid: serverId, at: now });
    this.sync.enqueue(this, [kind, key, serverId, Math.max(1, Math.round(remainingMs)), now]);
  }

  /** Settles `ready` (the first call wins): loaded, or served without waiting any longer. */
  settle(loaded: boolean): void {
    this.settleReady?.(loaded);
    this.settleReady = undefined;
  }

  /** Whether `ready` is still unsettled. */
  get waiting(): boolean {
    return this.settleReady !== undefined;
  }

  rotate(): void {
    this.older = this.recent;
    this.recent = undefined;
  }

  detach(): void {
    this.sync.detach(this);
  }
}
