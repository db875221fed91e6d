import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Value } from '@sinclair/typebox/value';
import { changedRows, type Store } from '@slb/db';
import { coarseReason } from '@slb/health';
import {
  HEALTH_KEY_PREFIX_DEFAULT,
  HEALTH_TRANSITION_FIELD,
  HealthTransitionMessage,
  healthTransitionsStream,
} from '@slb/model';
import { and, eq, sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';
import type { EventStore } from '../events/store.js';
import { DEFAULT_MAX_CLOCK_SKEW_MS, implausibleSince } from './transition-time.js';

export interface TransitionConsumerOptions {
  /** Where the targets' health is stored. */
  store: Store;
  redisUrl: string;
  /** Prefix of the fleet's keys; the workers' `SLB_HEALTH_KEY_PREFIX`. Default: `slb:health`. */
  keyPrefix?: string;
  /** Consumer group; every API instance shares it, so each message is stored once. Default: `api`. */
  group?: string;
  /**
   * This consumer's name. Default: host, pid and a random part, unique per process: two API processes under
   * one name would take each other's deliveries as their own. A crashed process's unacked entries are
   * claimed by the others after `claimIdleMs`.
   */
  consumer?: string;
  /** Called after a message is stored (not for skipped or invalid ones); errors are logged, never retried. */
  onTransition?: (message: HealthTransitionMessage) => void | Promise<void>;
  /** Entries of another consumer unacked for this long are taken over (at start and as often), ms. Default: 30,000. */
  claimIdleMs?: number;
  /**
   * Another consumer with nothing pending and idle this long is removed from the group, ms: names are per
   * process, so every crashed or killed API would otherwise leave one behind forever. Default: 600,000.
   */
  forgetIdleMs?: number;
  /** XREADGROUP block time, ms; bounds how long close() waits. Default: 1,000. */
  blockMs?: number;
  /** Entries per read. Default: 100. */
  batch?: number;
  /** Clock skew tolerated between a worker and the API when judging a report's `since`, ms. Default: 60,000. */
  maxClockSkewMs?: number;
  logger?: FastifyBaseLogger;
  /**
   * Where a target that turned normal or abnormal is recorded as its LB's `health` event, in the transaction
   * that stores it (recordNow joins the write: so a redelivered message records it once). Absent: no events.
   */
  events?: Pick<EventStore, 'recordNow'>;
}

export interface TransitionStats {
  stored: number;
  /** The listener or server no longer exists. */
  skipped: number;
  /** Older than the stored status (reordered delivery); not stored, not pushed. */
  stale: number;
  /** Not a transition message; dropped. */
  invalid: number;
  /** A `since` that cannot be true (future, before the target existed); dropped. */
  implausible: number;
}

type Entry = [id: string, fields: string[]];

/**
 * Stores the fleet's transitions into `server_health`. Reads the stream through a consumer group and acks an
 * entry only once it is handled, so a control plane that dies mid-batch re-reads it on restart.
 */
export class TransitionConsumer {
  readonly stats: TransitionStats = { stored: 0, skipped: 0, stale: 0, invalid: 0, implausible: 0 };
  private readonly redis: Redis;
  private readonly stream: string;
  private readonly group: string;
  private readonly consumer: string;
  private loop: Promise<void> | null = null;
  /** Not consuming (stopped, or not yet started). */
  private closed = false;
  /** close() was called: no restart. */
  private ended = false;
  private started = false;
  private lastClaimAt = 0;

  constructor(private readonly options: TransitionConsumerOptions) {
    // Its own connection: XREADGROUP BLOCK holds it.
    this.redis = new Redis(options.redisUrl, { maxRetriesPerRequest: null, lazyConnect: true });
    this.redis.on('error', (err) => this.options.logger?.warn({ err: err.message }, 'transition stream redis error'));
    this.stream = healthTransitionsStream(options.keyPrefix ?? HEALTH_KEY_PREFIX_DEFAULT);
    this.group = options.group ?? 'api';
    this.consumer = options.consumer ?? `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
  }

  /**
   * Creates the group if needed, handles what was left pending, then consumes in the background. Entries
   * other consumers left unacked for `claimIdleMs` are taken over first; the API, consuming under the
   * cluster-duties lease, passes 0: whoever held the lease before has stopped or died.
   */
  async start({ claimIdleMs = this.options.claimIdleMs ?? 30_000 }: { claimIdleMs?: number } = {}): Promise<void> {
    if (this.loop || this.ended) return;
    this.closed = false;
    if (this.redis.status === 'wait') await this.redis.connect();
    try {
      await this.redis.xgroup('CREATE', this.stream, this.group, '0', 'MKSTREAM');
    } catch (err) {
      if (!String(err).includes('BUSYGROUP')) throw err;
    }
    this.started = true;
    await this.recoverPending(claimIdleMs);
    if (!this.closed) this.loop = this.run();
  }

  /** Stops consuming (the lease moved away) after the batch under way; start() resumes. */
  async stop(): Promise<void> {
    this.closed = true;
    await this.loop;
    this.loop = null;
  }

  async close(): Promise<void> {
    this.ended = true;
    await this.stop();
    // Names are per process, so a cleanly stopped one leaves no consumer behind (it has nothing pending:
    // every read entry was acked); after a crash the name stays until Redis or an operator drops it.
    if (this.started) {
      const pending = (await this.redis.xpending(this.stream, this.group).catch(() => null)) as
        | [number, string | null, string | null, Array<[string, string]> | null]
        | null;
      const mine = pending?.[3]?.find(([name]) => name === this.consumer);
      if (pending && !mine)
        await this.redis.xgroup('DELCONSUMER', this.stream, this.group, this.consumer).catch(() => 0);
    }
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  private async recoverPending(claimIdleMs: number): Promise<void> {
    // Our own entries first (delivered before a restart, never acked), then other consumers' stale ones.
    for (let round = 0; round < 10_000; round++) {
      const own = (await this.redis.xreadgroup(
        'GROUP',
        this.group,
        this.consumer,
        'COUNT',
        this.options.batch ?? 100,
        'STREAMS',
        this.stream,
        '0',
      )) as Array<[string, Entry[]]> | null;
      const entries = own?.[0]?.[1] ?? [];
      if (entries.length === 0) break;
      await this.handle(entries);
    }
    await this.claimStale(claimIdleMs);
  }

  /**
   * Takes over entries another consumer read and left unacked for claimIdleMs (a process that died mid-batch).
   * Run at start and then every claimIdleMs: names are per process, so a crashed API's entries are never
   * "our own" after its restart, and must be claimed by whichever process runs.
   */
  private async claimStale(claimIdleMs = this.options.claimIdleMs ?? 30_000): Promise<void> {
    this.lastClaimAt = Date.now();
    let cursor = '0-0';
    for (let round = 0; round < 10_000; round++) {
      const [next, entries] = (await this.redis.xautoclaim(
        this.stream,
        this.group,
        this.consumer,
        claimIdleMs,
        cursor,
        'COUNT',
        100,
      )) as [string, Entry[], string[]];
      await this.handle(entries.filter((e) => Array.isArray(e[1])));
      cursor = next;
      if (cursor === '0-0') break;
    }
    await this.forgetGone();
  }

  /** Drops consumers of processes long gone that hold nothing (a name with pending entries is kept). */
  private async forgetGone(): Promise<void> {
    const forgetIdleMs = this.options.forgetIdleMs ?? 600_000;
    const consumers = (await this.redis.xinfo('CONSUMERS', this.stream, this.group)) as unknown[][];
    for (const fields of consumers) {
      const info = new Map<string, unknown>();
      for (let i = 0; i + 1 < fields.length; i += 2) info.set(String(fields[i]), fields[i + 1]);
      const name = String(info.get('name'));
      if (name === this.consumer || Number(info.get('pending')) !== 0) continue;
      if (Number(info.get('idle')) < forgetIdleMs) continue;
      await this.redis.xgroup('DELCONSUMER', this.stream, this.group, name);
      this.options.logger?.info({ consumer: name }, 'idle health transition consumer removed');
    }
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      try {
        if (Date.now() - this.lastClaimAt >= (this.options.claimIdleMs ?? 30_000)) await this.claimStale();
        const read = (await this.redis.xreadgroup(
          'GROUP',
          this.group,
          this.consumer,
          'COUNT',
          this.options.batch ?? 100,
          'BLOCK',
          this.options.blockMs ?? 1000,
          'STREAMS',
          this.stream,
          '>',
        )) as Array<[string, Entry[]]> | null;
        const entries = read?.[0]?.[1] ?? [];
        // Read after stop(): left pending, for whoever consumes next (the new lease holder claims them).
        if (entries.length > 0 && !this.closed) await this.handle(entries);
      } catch (err) {
        if (this.closed) return;
        if (String(err).includes('NOGROUP')) {
          // Redis lost the stream and its group (restarted without persistence): create them again, or no
          // transition would ever be read again.
          this.options.logger?.warn('health transition stream or group gone (Redis restarted?); recreating');
          await this.redis.xgroup('CREATE', this.stream, this.group, '0', 'MKSTREAM').catch(() => undefined);
          continue;
        }
        this.options.logger?.warn({ err: String(err) }, 'reading health transitions failed; retrying');
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  private async handle(entries: Entry[]): Promise<void> {
    for (const [id, fields] of entries) {
      // Stopped (the lease moved away): the rest stay pending, for the next holder to claim and store.
      if (this.closed) return;
      const message = decode(fields);
      if (message === null) {
        this.stats.invalid++;
        this.options.logger?.warn({ id }, 'malformed health transition dropped');
      } else {
        const outcome = await this.save(message, id);
        this.stats[outcome]++;
        if (outcome === 'skipped') {
          // A listener or server deleted while its check was in flight, normally. Kept visible (and counted in
          // the metric): with per-deployment namespaces another deployment's reports never reach this stream,
          // so a run of these points at a worker writing to the wrong namespace.
          this.options.logger?.info(
            { id, listenerId: message.listenerId, serverId: message.serverId, stream: this.stream },
            'health transition for an unknown listener or server skipped',
          );
        }
        if (outcome === 'stored') {
          try {
            await this.options.onTransition?.(message);
          } catch (err) {
            this.options.logger?.error({ err: String(err), ...message }, 'onTransition failed');
          }
        }
      }
      await this.redis.xack(this.stream, this.group, id);
    }
  }

  /**
   * Upserts the row unless the listener or server is gone or the report's time cannot be true; an older
   * report never overwrites a newer one. The stored reason is the tenant's coarse one (the table is what
   * the health route shows); the workers log the detail.
   */
  private save(m: HealthTransitionMessage, id: string): Promise<'stored' | 'skipped' | 'stale' | 'implausible'> {
    const { store } = this.options;
    const { t } = store;
    const now = Date.now();
    const skew = this.options.maxClockSkewMs ?? DEFAULT_MAX_CLOCK_SKEW_MS;
    return store.write(async (q) => {
      const [listener] = await q
        .select({
          createdAt: t.listeners.createdAt,
          loadBalancerId: t.listeners.loadBalancerId,
          protocol: t.listeners.protocol,
          port: t.listeners.port,
        })
        .from(t.listeners)
        .where(eq(t.listeners.id, m.listenerId));
      const [server] = await q
        .select({ createdAt: t.servers.createdAt, address: t.servers.address, port: t.servers.port })
        .from(t.servers)
        .where(eq(t.servers.id, m.serverId));
      if (!listener || !server) return 'skipped';
      const why = implausibleSince(m.since, [listener.createdAt, server.createdAt], now, skew);
      if (why) {
        this.options.logger?.warn(
          { id, listenerId: m.listenerId, serverId: m.serverId, since: m.since, reason: why },
          'health transition with an implausible time dropped',
        );
        return 'implausible';
      }
      const since = new Date(m.since).toISOString(); // one format, so the text comparison below is a time one
      const row = {
        status: m.status,
        since,
        lastError: coarseReason(m.lastError),
        updatedAt: new Date(now).toISOString(),
      };
      // A row dated beyond now + skew was stored before reports were checked: any report replaces it.
      const future = new Date(now + skew).toISOString();
      const [previous] = await q
        .select({ status: t.serverHealth.status })
        .from(t.serverHealth)
        .where(and(eq(t.serverHealth.listenerId, m.listenerId), eq(t.serverHealth.serverId, m.serverId)));
      const changes = changedRows(
        await q
          .insert(t.serverHealth)
          .values({ listenerId: m.listenerId, serverId: m.serverId, ...row })
          .onConflictDoUpdate({
            target: [t.serverHealth.listenerId, t.serverHealth.serverId],
            set: row,
            setWhere: sql`${t.serverHealth.since} <= excluded.since OR ${t.serverHealth.since} > ${future}`,
          }),
      );
      if (changes > 0 && previous?.status !== m.status) {
        try {
          await this.options.events?.recordNow({
            loadBalancerId: listener.loadBalancerId,
            kind: 'health',
            summary: `server ${server.address}:${server.port} ${m.status} on listener ${listener.protocol}:${listener.port}${row.lastError ? ` (${row.lastError})` : ''}`,
            resourceId: m.serverId,
            detail: {
              listenerId: m.listenerId,
              serverId: m.serverId,
              address: server.address,
              port: server.port,
              status: m.status,
              previousStatus: previous?.status ?? null,
              reason: row.lastError,
              since,
            },
          });
        } catch (err) {
          // The health row is what the nodes follow: it is stored even when its event cannot be (recordNow's
          // write is a savepoint of this one, so its failure undoes the event alone).
          this.options.logger?.warn({ err: String(err), id }, 'health event not recorded');
        }
      }
      return changes > 0 ? 'stored' : 'stale';
    });
  }
}

function decode(fields: string[]): HealthTransitionMessage | null {
  const i = fields.indexOf(HEALTH_TRANSITION_FIELD);
  const raw = i >= 0 && i % 2 === 0 ? fields[i + 1] : undefined;
  if (raw === undefined) return null;
  try {
    const value: unknown = JSON.parse(raw);
    return Value.Check(HealthTransitionMessage, value) ? value : null;
  } catch {
    return null;
  }
}
