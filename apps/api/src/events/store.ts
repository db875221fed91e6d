import { AsyncResource } from 'node:async_hooks';
import { changedRows, firstIdAt, newId, type Queries, type Store, type Tables } from '@slb/db';
import { EVENTS_KEPT_PER_LB, EVENTS_RETENTION_SECONDS, type EventsQuery, type LoadBalancerEvent } from '@slb/model';
import { and, asc, desc, eq, inArray, lt, lte, type SQL } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { cursorBeforeFilter, toPage } from '../services/common.js';

/** An event as its source knows it; the store gives it its id and time. */
export interface NewEvent {
  loadBalancerId: string;
  kind: LoadBalancerEvent['kind'];
  summary: string;
  actor?: LoadBalancerEvent['actor'];
  operation?: string | null;
  resourceId?: string | null;
  detail?: Record<string, unknown>;
}

/** Where the hub and the API's write hooks put events (the EventStore; a test may pass its own). */
export interface EventSink {
  record(event: NewEvent): void;
}

export interface EventStoreOptions {
  /** Events kept per load balancer (the newest). Default {@link EVENTS_KEPT_PER_LB}. */
  keepPerLb?: number;
  /** Events older than this are pruned, seconds. Default {@link EVENTS_RETENTION_SECONDS}. */
  retentionSeconds?: number;
  /** Rows per pruning DELETE. Default 500. */
  pruneBatch?: number;
  /** DELETE statements per pruning run at most; what is left waits for the next run. Default 40. */
  pruneBatchesPerRun?: number;
  /** Events waiting for their batched INSERT at most; more are dropped (counted, logged). Default 10,000. */
  maxPending?: number;
  logger?: FastifyBaseLogger;
}

export interface EventStats {
  recorded: number;
  /** Dropped because too many were waiting, or the batch's INSERT failed. */
  dropped: number;
  pruned: number;
}

type EventRow = Tables['lbEvents']['$inferInsert'] & { loadBalancerId: string };

/** Load balancer ids per existence check: well under SQLite's bound-variable limit (999 on old builds). */
const IDS_PER_CHECK = 500;
/** Rows per INSERT: 9 columns each, 450 variables, under the same limit. */
const ROWS_PER_INSERT = 50;

/**
 * The events of every load balancer, on either engine. `record` never throws: events are queued and written
 * by one transaction per turn of the event loop (the hub's, which may come by the thousand); reads flush the
 * queue first. `recordNow` writes one at once, inside the caller's write when there is one (an API write's,
 * a health transition's). Retention is pruned in bounded batches.
 */
export class EventStore implements EventSink {
  readonly stats: EventStats = { recorded: 0, dropped: 0, pruned: 0 };
  private pending: EventRow[] = [];
  /** Events taken off the queue by a flush whose transaction has not ended yet. */
  private writing = 0;
  private scheduled = false;
  private closed = false;
  /** The last flush: each one waits for the one before, so batches are written one at a time, in order. */
  private flushed: Promise<void> = Promise.resolve();
  /** The pruning run in progress, if any (the timer's: close() waits for it). */
  private pruning: Promise<void> | null = null;
  /** LBs that got events since they were last checked against the per-LB cap. */
  private readonly grown = new Set<string>();
  private readonly keep: number;
  private readonly retentionMs: number;
  private readonly batch: number;
  private readonly batchesPerRun: number;
  private readonly maxPending: number;
  private timer: NodeJS.Timeout | null = null;
  /**
   * The context the store was made in, outside any write. Queued batches are written there: an event
   * recorded while some write was open (the scheduled flush inherits its context) is not part of that
   * write's transaction, and must not wait for it to end or fail with it.
   */
  private readonly outside = new AsyncResource('EventStore');

  constructor(
    private readonly store: Store,
    private readonly options: EventStoreOptions = {},
  ) {
    this.keep = options.keepPerLb ?? EVENTS_KEPT_PER_LB;
    this.retentionMs = (options.retentionSeconds ?? EVENTS_RETENTION_SECONDS) * 1000;
    this.batch = options.pruneBatch ?? 500;
    this.batchesPerRun = options.pruneBatchesPerRun ?? 40;
    this.maxPending = options.maxPending ?? 10_000;
  }

  record(event: NewEvent): void {
    if (this.closed) return;
    if (this.pending.length + this.writing >= this.maxPending) {
      if (this.stats.dropped++ % 1000 === 0) {
        this.options.logger?.warn({ dropped: this.stats.dropped }, 'events dropped: too many waiting to be written');
      }
      return;
    }
    this.pending.push(toRow(event, Date.now()));
    if (!this.scheduled) {
      this.scheduled = true;
      // flush() never rejects.
      setImmediate(() => void this.flush());
    }
  }

  /**
   * Writes an event now, through `store.write`: inside a caller's write it is part of that transaction (a
   * savepoint of it) and commits or rolls back with it. An event of an LB that does not exist is not stored.
   * Throws as the INSERT does; for callers that want the event only if their own write happens.
   */
  async recordNow(event: NewEvent): Promise<void> {
    const row = toRow(event, Date.now());
    await this.store.write((q) => this.insert(q, [row]));
    this.stats.recorded++;
    this.grown.add(event.loadBalancerId);
  }

  /**
   * Writes what is queued, in one transaction, after the flushes before it have ended (so a reader that
   * awaits it sees every event recorded before the call). Never rejects: a failed batch is counted as
   * dropped and logged.
   */
  flush(): Promise<void> {
    this.scheduled = false;
    const rows = this.pending;
    this.pending = [];
    this.writing += rows.length;
    this.flushed = this.flushed.then(() => this.writeBatch(rows));
    return this.flushed;
  }

  private async writeBatch(rows: EventRow[]): Promise<void> {
    if (rows.length === 0) return;
    try {
      await this.outside.runInAsyncScope(() => this.store.write((q) => this.insert(q, rows)));
      this.stats.recorded += rows.length;
      for (const row of rows) this.grown.add(row.loadBalancerId);
    } catch (err) {
      this.stats.dropped += rows.length;
      this.options.logger?.error({ err: String(err), events: rows.length }, 'events could not be written');
    } finally {
      this.writing -= rows.length;
    }
  }

  /**
   * Inserts the rows whose LB exists (an event may name an LB deleted since: a node leaving it, a queued
   * write's event), in the caller's transaction. On PostgreSQL the LBs found are held (FOR KEY SHARE, as the
   * foreign key's own check would) so that one deleted meanwhile cannot fail the whole batch.
   */
  private async insert(q: Queries, rows: EventRow[]): Promise<void> {
    const { t, dialect } = this.store;
    const ids = [...new Set(rows.map((r) => r.loadBalancerId))];
    const existing = new Set<string>();
    for (let i = 0; i < ids.length; i += IDS_PER_CHECK) {
      const select = q
        .select({ id: t.loadBalancers.id })
        .from(t.loadBalancers)
        .where(inArray(t.loadBalancers.id, ids.slice(i, i + IDS_PER_CHECK)));
      // SQLite's builder has no locking clause (and needs none: its writes take turns).
      const found = await (dialect === 'postgres' ? select.for('key share') : select);
      for (const { id } of found) existing.add(id);
    }
    const kept = existing.size === ids.length ? rows : rows.filter((r) => existing.has(r.loadBalancerId));
    for (let i = 0; i < kept.length; i += ROWS_PER_INSERT) {
      await q.insert(t.lbEvents).values(kept.slice(i, i + ROWS_PER_INSERT));
    }
  }

  async list(lbId: string, query: EventsQuery) {
    await this.flush();
    const { t } = this.store;
    const limit = query.limit ?? 50;
    const rows = await this.store.read((q) =>
      q
        .select()
        .from(t.lbEvents)
        .where(
          and(
            eq(t.lbEvents.loadBalancerId, lbId),
            query.kind === undefined ? undefined : eq(t.lbEvents.kind, query.kind),
            cursorBeforeFilter(t.lbEvents.id, query.cursor),
          ),
        )
        .orderBy(desc(t.lbEvents.id))
        .limit(limit + 1),
    );
    return toPage(rows, limit, toApi);
  }

  /**
   * One bounded pruning run: events past the retention (a primary-key range: ids carry their time), then the
   * oldest of each LB over the per-LB cap, checking only LBs that got events since they were last checked.
   * At most pruneBatchesPerRun statements (DELETEs of pruneBatch rows, and the cap lookups), each its own
   * transaction so other writes go between them; returns the rows deleted.
   */
  async prune(now = Date.now()): Promise<number> {
    await this.flush();
    const { t } = this.store;
    const events = t.lbEvents;
    let budget = this.batchesPerRun;
    let deleted = 0;
    const cutoff = firstIdAt('event', now - this.retentionMs);
    while (budget > 0) {
      budget--;
      const changes = await this.deleteFirst(lt(events.id, cutoff));
      deleted += changes;
      if (changes < this.batch) break;
    }
    for (const lbId of [...this.grown]) {
      if (budget <= 0) break;
      budget--;
      const [nth] = await this.store.read((q) =>
        q
          .select({ id: events.id })
          .from(events)
          .where(eq(events.loadBalancerId, lbId))
          .orderBy(desc(events.id))
          .limit(1)
          .offset(this.keep),
      );
      if (nth === undefined) {
        this.grown.delete(lbId);
        continue;
      }
      const oldestToGo = nth.id;
      while (budget > 0) {
        budget--;
        const changes = await this.deleteFirst(and(eq(events.loadBalancerId, lbId), lte(events.id, oldestToGo)));
        deleted += changes;
        if (changes < this.batch) {
          this.grown.delete(lbId);
          break;
        }
      }
    }
    this.stats.pruned += deleted;
    return deleted;
  }

  /** Deletes the oldest pruneBatch events matching `where`, in a write of its own; returns how many. */
  private deleteFirst(where: SQL | undefined): Promise<number> {
    const events = this.store.t.lbEvents;
    return this.store.write(async (q) => {
      const batch = q.select({ id: events.id }).from(events).where(where).orderBy(asc(events.id)).limit(this.batch);
      return changedRows(await q.delete(events).where(inArray(events.id, batch)));
    });
  }

  /** Prunes every intervalMs (unref'd) until close(); a run still going when the next is due skips it. */
  startPruning(intervalMs: number): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => {
      if (this.pruning) return;
      this.pruning = this.prune()
        .then((deleted) => {
          if (deleted > 0) this.options.logger?.debug({ deleted }, 'events pruned');
        })
        .catch((err: unknown) => {
          this.options.logger?.warn({ err: String(err) }, 'pruning events failed');
        })
        .finally(() => {
          this.pruning = null;
        });
    }, intervalMs);
    this.timer.unref();
  }

  /** Stops pruning (the cluster-duties lease moved to another API process); startPruning resumes. */
  stopPruning(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Stops pruning, writes what is queued and waits for it (and for a pruning run in progress); events
   * recorded from now on are ignored (the database closes next).
   */
  async close(): Promise<void> {
    this.stopPruning();
    this.closed = true;
    await this.flush();
    await this.pruning;
  }
}

function toRow(e: NewEvent, now: number): EventRow {
  return {
    id: newId('event', now),
    loadBalancerId: e.loadBalancerId,
    kind: e.kind,
    at: new Date(now).toISOString(),
    summary: e.summary.slice(0, 500),
    actor: e.actor ?? null,
    operation: e.operation ?? null,
    resourceId: e.resourceId ?? null,
    detail: e.detail ?? {},
  };
}

function toApi(row: Tables['lbEvents']['$inferSelect']): LoadBalancerEvent {
  return {
    id: row.id,
    loadBalancerId: row.loadBalancerId,
    at: row.at,
    kind: row.kind,
    summary: row.summary,
    actor: row.actor ?? null,
    operation: row.operation,
    resourceId: row.resourceId,
    detail: row.detail,
  };
}
