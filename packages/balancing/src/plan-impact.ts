import { buildMaglevTable, DEFAULT_MAGLEV_TABLE_SIZE } from './maglev.js';
import type { SchedulerKind } from './schedulers/index.js';

/** One backend of a pool as the nodes are told about it (a snapshot's backend). */
export interface PoolBackend {
  readonly serverId: string;
  readonly address: string;
  readonly port: number;
  /** 0 takes no new flows. */
  readonly weight: number;
  readonly healthy: boolean;
}

/** What a node balances new flows over: an L4 listener's backends, or one server group of an L7 listener. */
export interface PoolConfig {
  readonly scheduler: SchedulerKind;
  /** The listener's connectionDrainTimeout: how long a backend that stops taking flows keeps its open ones. */
  readonly drainSeconds: number;
  readonly backends: readonly PoolBackend[];
}

/** One backend before and after. A backend is its server at an address:port (as the node keys it). */
export interface ServerImpact {
  serverId: string;
  address: string;
  port: number;
  /** null: not a backend of the pool before. */
  weightBefore: number | null;
  /** null: not a backend of the pool after. */
  weightAfter: number | null;
  /** Share of new flows it takes before (0–1). */
  shareBefore: number;
  /** Share of new flows it takes after (0–1). */
  shareAfter: number;
  /** false: removed, weight 0, or the pool goes away. */
  takesNewConnections: boolean;
  /** Seconds its open connections may finish, when it stops taking new ones; null otherwise. */
  drainSeconds: number | null;
}

export interface PoolImpact {
  change: 'added' | 'removed' | 'changed';
  /** maglev: the pool hashes (sch, tch) and movedShare counts table slots; weights: wrr, wlc, rr. */
  method: 'maglev' | 'weights';
  /** Share of client flows that would go to another backend (0–1); null when the pool is added. */
  movedShare: number | null;
  servers: ServerImpact[];
}

/** Options of {@link poolImpact}. */
export interface PoolImpactOptions {
  /** The Maglev table size the nodes build. Default DEFAULT_MAGLEV_TABLE_SIZE (65537), the L4 node's. */
  readonly maglevTableSize?: number;
}

const isMaglev = (kind: SchedulerKind) => kind === 'sch' || kind === 'tch';
const keyOf = (b: PoolBackend) => `${b.serverId} ${b.address} ${b.port}`;

/**
 * The backends taking new flows, as the nodes choose them: healthy ones of positive weight, or, when none is
 * healthy, every positive-weight one (the nodes fail open rather than refuse every flow).
 */
export function poolCandidates(backends: readonly PoolBackend[]): PoolBackend[] {
  const weighted = backends.filter((b) => b.weight > 0);
  const healthy = weighted.filter((b) => b.healthy);
  return healthy.length > 0 ? healthy : weighted;
}

/** The backend (by key) each Maglev slot sends flows to, or null for an empty table. */
function maglevOwners(pool: PoolConfig, size: number): (string | null)[] {
  const candidates = poolCandidates(pool.backends);
  // Built as the node builds it: ids are server ids, so the same servers give the same table on every node.
  const table = buildMaglevTable(
    candidates.map((b) => ({ id: b.serverId, weight: b.weight })),
    { tableSize: size },
  );
  const byId = new Map(candidates.map((b) => [b.serverId, keyOf(b)]));
  const keys = table.backendIds.map((id) => byId.get(id)!);
  return Array.from(table.slots, (s) => (s < 0 ? null : keys[s]!));
}

interface Side {
  shares: Map<string, number>;
  owners: (string | null)[] | null;
}

function sideOf(pool: PoolConfig | null, size: number): Side {
  const shares = new Map<string, number>();
  if (pool === null) return { shares, owners: null };
  if (isMaglev(pool.scheduler)) {
    const owners = maglevOwners(pool, size);
    for (const k of owners) if (k !== null) shares.set(k, (shares.get(k) ?? 0) + 1 / size);
    return { shares, owners };
  }
  const candidates = poolCandidates(pool.backends);
  const weightOf = (b: PoolBackend) => (pool.scheduler === 'rr' ? 1 : b.weight);
  const total = candidates.reduce((sum, b) => sum + weightOf(b), 0);
  for (const b of candidates) shares.set(keyOf(b), weightOf(b) / total);
  return { shares, owners: null };
}

function samePool(a: PoolConfig, b: PoolConfig): boolean {
  if (a.scheduler !== b.scheduler || a.backends.length !== b.backends.length) return false;
  const text = (p: PoolConfig) =>
    p.backends
      .map((x) => `${keyOf(x)} ${x.weight} ${x.healthy}`)
      .sort()
      .join('\n');
  return text(a) === text(b);
}

function movedShare(before: PoolConfig, after: PoolConfig, b: Side, a: Side): number {
  if (b.owners !== null && a.owners !== null && before.scheduler === after.scheduler) {
    // Same hash over two tables: a flow moves when its slot points elsewhere (a slot that had no backend
    // carried no flow).
    let moved = 0;
    for (let i = 0; i < b.owners.length; i++) {
      if (b.owners[i] !== null && b.owners[i] !== a.owners[i]) moved++;
    }
    return moved / b.owners.length;
  }
  if (isMaglev(before.scheduler) || isMaglev(after.scheduler)) {
    // The hash itself changes (sch ↔ tch, or to or from a non-hashing scheduler): where a flow goes after
    // is independent of where it went, so it stays only by chance.
    let stays = 0;
    for (const [k, share] of b.shares) stays += share * (a.shares.get(k) ?? 0);
    return 1 - stays;
  }
  // No hashing: only clients held to a backend (persistence, sticky sessions) have a place to lose, and
  // they lose it when their backend stops taking new flows.
  let moved = 0;
  for (const [k, share] of b.shares) if (!a.shares.has(k)) moved += share;
  return moved;
}

/**
 * What a change does to one pool's new flows: null when it forwards exactly as before (same scheduler, same
 * backends with the same weights and health), else the change, the share of flows that move to another
 * backend and each backend's share before and after. `before` null: the pool starts serving; `after` null:
 * it stops (every flow loses it).
 */
export function poolImpact(
  before: PoolConfig | null,
  after: PoolConfig | null,
  options: PoolImpactOptions = {},
): PoolImpact | null {
  if (before === null && after === null) return null;
  if (before !== null && after !== null && samePool(before, after)) return null;
  const size = options.maglevTableSize ?? DEFAULT_MAGLEV_TABLE_SIZE;
  const b = sideOf(before, size);
  const a = sideOf(after, size);
  const scheduler = (after ?? before)!.scheduler;

  const servers: ServerImpact[] = [];
  const seen = new Map<string, ServerImpact>();
  for (const [side, pool] of [
    ['before', before],
    ['after', after],
  ] as const) {
    for (const backend of pool?.backends ?? []) {
      const key = keyOf(backend);
      let s = seen.get(key);
      if (s === undefined) {
        s = {
          serverId: backend.serverId,
          address: backend.address,
          port: backend.port,
          weightBefore: null,
          weightAfter: null,
          shareBefore: b.shares.get(key) ?? 0,
          shareAfter: a.shares.get(key) ?? 0,
          takesNewConnections: false,
          drainSeconds: null,
        };
        seen.set(key, s);
        servers.push(s);
      }
      if (side === 'before') s.weightBefore = backend.weight;
      else s.weightAfter = backend.weight;
    }
  }
  for (const s of servers) {
    s.takesNewConnections = s.weightAfter !== null && s.weightAfter > 0;
    const tookThem = s.weightBefore !== null && s.weightBefore > 0;
    if (tookThem && !s.takesNewConnections) s.drainSeconds = (after ?? before)!.drainSeconds;
  }

  return {
    change: before === null ? 'added' : after === null ? 'removed' : 'changed',
    method: isMaglev(scheduler) ? 'maglev' : 'weights',
    movedShare: before === null ? null : after === null ? 1 : movedShare(before, after, b, a),
    servers,
  };
}
