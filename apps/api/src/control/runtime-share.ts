import type { ListenerBindError } from '@slb/model';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { Elsewhere } from './fleet-placement.js';
import { bindErrorsOf, type LbRuntime, type NodePart, runtimeOf } from './lb-runtime.js';
import type { Rival } from './vip-serving.js';

/**
 * How long a replica's parts count after its last publish: the parts of a replica killed stop counting
 * within this. Measured on Redis's clock (its TIME, and key TTLs), so the replicas' clocks need not agree.
 */
export const RUNTIME_SHARE_TTL_MS = 3000;
/**
 * How often changed parts are published, and unchanged ones kept alive. A publish computes the parts of the
 * LBs that changed only (the hub notes them), so it can be often: the other replicas show a write's LB
 * active within about this after its last ack.
 */
const PUBLISH_EVERY_MS = 25;
const KEEP_ALIVE_EVERY_MS = 1000;
/** How long the list of live replicas is used before it is read again. */
const REPLICAS_FRESH_MS = 500;
/** How often the other replicas' VIP binders and spread LBs' hosts are read. */
const RIVALS_EVERY_MS = 250;

/**
 * Marks a replica live until Redis's now + TTL, and drops those past theirs. KEYS[1]: the replicas' sorted
 * set; ARGV: replica id, TTL in ms. On Redis's clock: a replica whose clock runs ahead would otherwise count
 * the others dead, and one behind would keep a dead one.
 */
const MARK_LIVE = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], string.format('%d', now + tonumber(ARGV[2])), ARGV[1])
return redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now))`;

/** The replicas live now, on Redis's clock. KEYS[1]: the replicas' sorted set. */
const LIVE_REPLICAS = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], string.format('%d', now), '+inf')`;

/** Where a deployment's replicas keep their parts: its own names, as every Redis name (namespaceOf). */
export function runtimeShareKeysOf(clusterId: string) {
  return {
    /** Sorted set: replica id → until when (Redis's clock, ms) its parts count. */
    replicas: `${clusterId}:runtime:replicas`,
    /** Hash of one replica: LB id → the JSON of its parts held there. */
    partsOf: (replicaId: string) => `${clusterId}:runtime:parts:${replicaId}`,
    /** Hash of one replica: LB id → the JSON of the Rivals (its online nodes it told to bind the VIP). */
    bindersOf: (replicaId: string) => `${clusterId}:runtime:binders:${replicaId}`,
    /** Hash of one replica: spread LB id → the JSON of its online hosts there, as Rivals (see place). */
    hostsOf: (replicaId: string) => `${clusterId}:runtime:hosts:${replicaId}`,
  };
}

/** What the share reads of this replica's hub. */
export interface RuntimeSource {
  readonly runtimeGeneration: number;
  runtimeParts(lbId: string): NodePart[];
  /** The LBs whose parts may have changed since the last call ('all': any), taken. */
  takeRuntimeTouched(): ReadonlySet<string> | 'all';
  /** These LBs' parts (an LB without any left out). */
  runtimePartsOf(lbIds: ReadonlySet<string> | 'all'): Map<string, NodePart[]>;
  /** These spread LBs' online hosts (see place). */
  spreadHosts(lbIds: ReadonlySet<string> | 'all'): Map<string, Rival[]>;
  /** The other replicas' VIP binders or spread LBs' hosts changed (see chooseVipBinders, place). */
  setElsewhere(elsewhere: Elsewhere): void;
}

/**
 * An LB's runtime as every replica sees it. Each replica holds the sessions of the nodes connected to it,
 * and only those nodes' acks say whether the LB is active: without the others' parts a replica holding no
 * node answered `provisioning` for every LB, and a client polling replicas in turn saw the status flap.
 *
 * Each replica publishes its parts to Redis (only what changed, at most every PUBLISH_EVERY_MS) and reads
 * the other live replicas' when it answers. Redis away: a replica answers from its own parts.
 *
 * It also publishes which of its nodes it told to bind each VIP and where it placed each spread LB, and reads
 * the others' every RIVALS_EVERY_MS for its hub: with nodes split between replicas, one binder per VIP
 * (chooseVipBinders) and `nodeCount` hosts per spread LB (place) are agreed on.
 */
export class RuntimeShare {
  private readonly keys;
  /** What Redis holds for this replica, as last written; null: unknown, written whole next time. */
  private published: Published | null = null;
  /** The other replicas' binders and hosts as last given to the hub (JSON); when last asked for, and read. */
  private rivalsJson = JSON.stringify({ binders: [], hosts: [] });
  private rivalsAskedAt = 0;
  private rivalsReadAt = Date.now();
  private readingRivals = false;
  private publishedGeneration = -1;
  private keptAliveAt = 0;
  private running: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private replicas: { ids: string[]; readAt: number } | null = null;
  private warnedAt = 0;

  constructor(
    private readonly redis: Redis,
    clusterId: string,
    /** This replica (the lease's holder id), not read back from the share. */
    private readonly replicaId: string,
    private readonly source: RuntimeSource,
    private readonly log?: FastifyBaseLogger,
  ) {
    this.keys = runtimeShareKeysOf(clusterId);
  }

  start(): void {
    this.timer ??= setInterval(() => this.tick(), PUBLISH_EVERY_MS);
    this.timer.unref();
  }

  /** Stops publishing and takes this replica's parts out of the share (best effort: they expire anyway). */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => {}); // a publish that failed was logged
    await this.redis
      .multi()
      .del(this.keys.partsOf(this.replicaId), this.keys.bindersOf(this.replicaId), this.keys.hostsOf(this.replicaId))
      .zrem(this.keys.replicas, this.replicaId)
      .exec()
      .catch(() => {});
  }

  /** Status and per-node convergence of each LB, from this replica's parts and the other live replicas'. */
  async runtimes(lbs: readonly { id: string; configVersion: number }[]): Promise<LbRuntime[]> {
    const parts = await this.partsOf(lbs.map((lb) => lb.id));
    return lbs.map(({ id, configVersion }) => runtimeOf(parts.get(id) ?? [], configVersion));
  }

  /** Which nodes cannot run each listener, and why, from this replica's parts and the other live replicas'. */
  async bindErrors(listeners: readonly { id: string; loadBalancerId: string }[]): Promise<ListenerBindError[][]> {
    const parts = await this.partsOf(listeners.map((l) => l.loadBalancerId));
    return listeners.map(({ id, loadBalancerId }) => bindErrorsOf(parts.get(loadBalancerId) ?? [], id));
  }

  /** Each LB's parts: this replica's and the other live replicas'. */
  private async partsOf(lbIds: string[]): Promise<Map<string, NodePart[]>> {
    const unique = [...new Set(lbIds)];
    const others = await this.othersParts(unique);
    return new Map(unique.map((id) => [id, [...this.source.runtimeParts(id), ...(others.get(id) ?? [])]]));
  }

  /** Publishes now what changed (tests; the timer does it otherwise). */
  async publish(): Promise<void> {
    while (this.running) await this.running.catch(() => {});
    this.running = this.write().finally(() => {
      this.running = null;
    });
    await this.running;
  }

  private tick(): void {
    if (this.running) return;
    if (!this.readingRivals && Date.now() - this.rivalsAskedAt >= RIVALS_EVERY_MS) {
      this.rivalsAskedAt = Date.now();
      this.readingRivals = true;
      this.readRivals()
        .catch((err: unknown) => {
          this.warn(err, "other replicas' VIP binders and hosts not read");
          // Not known for longer than they would last: forgotten, or a binder that died while Redis was away
          // would keep this replica's nodes standing by for good.
          if (Date.now() - this.rivalsReadAt > RUNTIME_SHARE_TTL_MS) this.giveRivals({}, {});
        })
        .finally(() => {
          this.readingRivals = false;
        });
    }
    const due =
      this.source.runtimeGeneration !== this.publishedGeneration ||
      Date.now() - this.keptAliveAt >= KEEP_ALIVE_EVERY_MS;
    if (!due) return;
    this.publish().catch((err: unknown) => this.warn(err, 'runtime parts not published'));
  }

  private async write(): Promise<void> {
    const generation = this.source.runtimeGeneration;
    const now = Date.now();
    const touched = this.source.takeRuntimeTouched();
    const previous = this.published;
    // Unknown from here on until Redis says yes: a write that fails half-way is written whole next time.
    this.published = null;
    // Only the LBs whose parts may have changed are computed again, unless Redis's copy is unknown.
    const scope = previous === null ? 'all' : touched;
    const fresh: Published = { parts: new Map(), binders: new Map(), hosts: new Map() };
    for (const [id, parts] of this.source.runtimePartsOf(scope)) {
      fresh.parts.set(id, JSON.stringify(parts));
      const binders = bindersIn(parts);
      if (binders.length > 0) fresh.binders.set(id, JSON.stringify(binders));
    }
    for (const [id, hosts] of this.source.spreadHosts(scope)) fresh.hosts.set(id, JSON.stringify(hosts));
    const current: Published = scope === 'all' || previous === null ? fresh : previous;
    const tx = this.redis.multi();
    const partsKey = this.keys.partsOf(this.replicaId);
    // First: whether the hash is still there (0: it expired, this process stalled past the TTL).
    tx.pexpire(partsKey, RUNTIME_SHARE_TTL_MS);
    for (const hash of ['parts', 'binders', 'hosts'] as const) {
      const key = this.keys[`${hash}Of`](this.replicaId);
      const before = previous?.[hash];
      const held = fresh[hash];
      if (before === undefined) tx.del(key);
      const set: string[] = [];
      const gone: string[] = [];
      for (const id of scope === 'all' ? new Set([...(before?.keys() ?? []), ...held.keys()]) : scope) {
        const json = held.get(id);
        if (json === undefined) {
          if (before?.has(id)) gone.push(id);
        } else if (before?.get(id) !== json) set.push(id, json);
      }
      if (set.length > 0) tx.hset(key, ...set);
      if (gone.length > 0) tx.hdel(key, ...gone);
      tx.pexpire(key, RUNTIME_SHARE_TTL_MS);
      if (current !== fresh) {
        for (let i = 0; i < set.length; i += 2) current[hash].set(set[i]!, set[i + 1]!);
        for (const id of gone) current[hash].delete(id);
      }
    }
    tx.eval(MARK_LIVE, 1, this.keys.replicas, this.replicaId, RUNTIME_SHARE_TTL_MS);
    const replies = await tx.exec();
    const failed = replies?.find(([err]) => err !== null);
    if (!replies || failed) throw failed?.[0] ?? new Error('runtime parts: transaction discarded');
    // The hash had expired: only what changed was written into a new one, so write it whole next time.
    if (previous !== null && previous.parts.size > 0 && replies[0]?.[1] === 0) return;
    this.published = current;
    this.publishedGeneration = generation;
    this.keptAliveAt = now;
  }

  /**
   * Reads the other live replicas' VIP binders and spread LBs' hosts, and gives them to the hub when they
   * changed (the timer's).
   */
  async readRivals(): Promise<void> {
    const replicas = await this.liveReplicas();
    const binders: Record<string, Rival[]> = {};
    const hosts: Record<string, Rival[]> = {};
    if (replicas.length > 0) {
      const pipeline = this.redis.pipeline();
      for (const id of replicas) pipeline.hgetall(this.keys.bindersOf(id)).hgetall(this.keys.hostsOf(id));
      ((await pipeline.exec()) ?? []).forEach(([err, hash], i) => {
        if (err !== null || typeof hash !== 'object' || hash === null) return;
        const into = i % 2 === 0 ? binders : hosts;
        for (const [lbId, json] of Object.entries(hash as Record<string, string>)) {
          const found = parsedList<Rival>(json, isRival);
          if (found.length > 0) into[lbId] = [...(into[lbId] ?? []), ...found];
        }
      });
    }
    this.rivalsReadAt = Date.now();
    this.giveRivals(binders, hosts);
  }

  private giveRivals(binders: Record<string, Rival[]>, hosts: Record<string, Rival[]>): void {
    const sorted = (rivals: Record<string, Rival[]>) => Object.entries(rivals).sort(([a], [b]) => (a < b ? -1 : 1));
    const entries = { binders: sorted(binders), hosts: sorted(hosts) };
    const json = JSON.stringify(entries);
    if (json === this.rivalsJson) return;
    this.rivalsJson = json;
    this.source.setElsewhere({ binders: new Map(entries.binders), hosts: new Map(entries.hosts) });
  }

  /** The other live replicas' parts of these LBs; none when Redis does not answer (logged now and then). */
  private async othersParts(lbIds: string[]): Promise<Map<string, NodePart[]>> {
    const out = new Map<string, NodePart[]>();
    if (lbIds.length === 0) return out;
    try {
      const replicas = await this.liveReplicas();
      if (replicas.length === 0) return out;
      const pipeline = this.redis.pipeline();
      for (const id of replicas) pipeline.hmget(this.keys.partsOf(id), ...lbIds);
      for (const [err, values] of (await pipeline.exec()) ?? []) {
        if (err !== null || !Array.isArray(values)) continue;
        values.forEach((json, i) => {
          const parts = typeof json === 'string' ? parsedList<NodePart>(json, isPart) : [];
          const lbId = lbIds[i];
          if (lbId !== undefined && parts.length > 0) out.set(lbId, [...(out.get(lbId) ?? []), ...parts]);
        });
      }
    } catch (err) {
      this.warn(err, "other replicas' runtime not read: answered from this replica's nodes alone");
    }
    return out;
  }

  private async liveReplicas(): Promise<string[]> {
    const now = Date.now();
    if (this.replicas && now - this.replicas.readAt < REPLICAS_FRESH_MS) return this.replicas.ids;
    const live = (await this.redis.eval(LIVE_REPLICAS, 1, this.keys.replicas)) as string[];
    const ids = live.filter((id) => id !== this.replicaId);
    this.replicas = { ids, readAt: now };
    return ids;
  }

  private warn(err: unknown, message: string): void {
    const now = Date.now();
    if (now - this.warnedAt < 10_000) return;
    this.warnedAt = now;
    this.log?.warn({ err: String(err) }, message);
  }
}

/** What this replica last wrote to its hashes in Redis: LB id → JSON. */
interface Published {
  parts: Map<string, string>;
  binders: Map<string, string>;
  hosts: Map<string, string>;
}

/** The nodes of these parts told to bind the VIP and online, as rivals for another replica's binder. */
function bindersIn(parts: readonly NodePart[]): Rival[] {
  return parts
    .filter((p) => p.kind === 'l4' && p.role === 'active' && p.online)
    .map((p) => ({ nodeId: p.nodeId, serves: p.acked > 0 && p.error === undefined }));
}

/** What another replica published (parts or rivals): the items that are `T`; anything else counts as none. */
function parsedList<T>(json: string, isItem: (value: Record<string, unknown>) => boolean): T[] {
  try {
    const parsed: unknown = JSON.parse(json);
    if (!Array.isArray(parsed)) return [];
    return parsed.filter((v) => typeof v === 'object' && v !== null && isItem(v as Record<string, unknown>));
  } catch {
    return [];
  }
}

const isRival = (r: Record<string, unknown>) => typeof r.nodeId === 'string' && typeof r.serves === 'boolean';

function isPart(p: Record<string, unknown>): boolean {
  return (
    typeof p.nodeId === 'string' &&
    (p.kind === 'l4' || p.kind === 'l7') &&
    typeof p.address === 'string' &&
    typeof p.online === 'boolean' &&
    typeof p.acked === 'number' &&
    (p.failures === undefined || (Array.isArray(p.failures) && p.failures.every(isFailure)))
  );
}

function isFailure(f: unknown): boolean {
  if (typeof f !== 'object' || f === null) return false;
  const { listenerId, reason } = f as Record<string, unknown>;
  return typeof listenerId === 'string' && typeof reason === 'string';
}
