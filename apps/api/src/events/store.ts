import { type Db, firstIdAt, lbEvents, newId } from '@slb/db';
import { EVENTS_KEPT_PER_LB, EVENTS_RETENTION_SECONDS, type EventsQuery, type LoadBalancerEvent } from '@slb/model';
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { and, desc, eq } from 'drizzle-orm';
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

type Row = [
  id: string,
  lbId: string,
  kind: string,
  at: string,
  summary: string,
  actor: string | null,
  operation: string | null,
  resourceId: string | null,
  detail: string,
];

/**
 * The events of every load balancer. `record` never throws: events are queued and written by one INSERT
 * transaction per turn of the event loop (the hub's, which may come by the thousand); reads flush the queue
 * first. `recordNow` writes one at once (an API write's, a health transition's, in their own turn). Retention
 * is pruned in bounded batches.
 */
export class EventStore implements EventSink {
  readonly stats: EventStats = { recorded: 0, dropped: 0, pruned: 0 };
  private pending: Row[] = [];
  private scheduled = false;
  private closed = false;
  /** LBs that got events since they were last checked against the per-LB cap. */
  private readonly grown = new Set<string>();
  private readonly insert: Statement;
  private readonly deleteOlder: Statement;
  private readonly nthNewest: Statement;
  private readonly deleteLbUpTo: Statement;
  private readonly keep: number;
  private readonly retentionMs: number;
  private readonly batch: number;
  private readonly batchesPerRun: number;
  private readonly maxPending: number;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Db,
    private readonly sqlite: Database.Database,
    private readonly options: EventStoreOptions = {},
  ) {
    // An event may name an LB deleted since (a node leaving it, a queued write's event): it is not stored.
    this.insert = sqlite.prepare(
      `INSERT INTO lb_events (id, load_balancer_id, kind, at, summary, actor, operation, resource_id, detail)
       SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM load_balancers WHERE id = ?)`,
    );
    this.deleteOlder = sqlite.prepare(
      'DELETE FROM lb_events WHERE id IN (SELECT id FROM lb_events WHERE id < ? ORDER BY id LIMIT ?)',
    );
    this.nthNewest = sqlite
      .prepare('SELECT id FROM lb_events WHERE load_balancer_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?')
      .pluck();
    this.deleteLbUpTo = sqlite.prepare(
      `DELETE FROM lb_events WHERE id IN
       (SELECT id FROM lb_events WHERE load_balancer_id = ? AND id <= ? ORDER BY id LIMIT ?)`,
    );
    this.keep = options.keepPerLb ?? EVENTS_KEPT_PER_LB;
    this.retentionMs = (options.retentionSeconds ?? EVENTS_RETENTION_SECONDS) * 1000;
    this.batch = options.pruneBatch ?? 500;
    this.batchesPerRun = options.pruneBatchesPerRun ?? 40;
    this.maxPending = options.maxPending ?? 10_000;
  }

  record(event: NewEvent): void {
    if (this.closed) return;
    if (this.pending.length >= this.maxPending) {
      if (this.stats.dropped++ % 1000 === 0) {
        this.options.logger?.warn({ dropped: this.stats.dropped }, 'events dropped: too many waiting to be written');
      }
      return;
    }
    this.pending.push(toRow(event, Date.now()));
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /**
   * Writes an event now, on the caller's connection: inside a caller's transaction it commits (or rolls back)
   * with it. Throws as the INSERT does; for callers that want the event only if their own write happens.
   */
  recordNow(event: NewEvent): void {
    const row = toRow(event, Date.now());
    this.insert.run(...row, event.loadBalancerId);
    this.stats.recorded++;
    this.grown.add(event.loadBalancerId);
  }

  /** Writes what is queued, in one transaction. */
  flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const rows = this.pending;
    this.pending = [];
    try {
      this.sqlite.transaction(() => {
        for (const row of rows) this.insert.run(...row, row[1]);
      })();
      this.stats.recorded += rows.length;
      for (const row of rows) this.grown.add(row[1]);
    } catch (err) {
      this.stats.dropped += rows.length;
      this.options.logger?.error({ err: String(err), events: rows.length }, 'events could not be written');
    }
  }

  list(lbId: string, query: EventsQuery) {
    this.flush();
    const limit = query.limit ?? 50;
    const rows = this.db
      .select()
      .from(lbEvents)
      .where(
        and(
          eq(lbEvents.loadBalancerId, lbId),
          query.kind === undefined ? undefined : eq(lbEvents.kind, query.kind),
          cursorBeforeFilter(lbEvents.id, query.cursor),
        ),
      )
      .orderBy(desc(lbEvents.id))
      .limit(limit + 1)
      .all();
    return toPage(rows, limit, toApi);
  }

  /**
   * One bounded pruning run: events past the retention (a primary-key range: ids carry their time), then the
   * oldest of each LB over the per-LB cap, checking only LBs that got events since they were last checked.
   * At most pruneBatchesPerRun DELETEs of pruneBatch rows; returns the rows deleted.
   */
  prune(now = Date.now()): number {
    this.flush();
    let budget = this.batchesPerRun;
    let deleted = 0;
    const cutoff = firstIdAt('event', now - this.retentionMs);
    while (budget > 0) {
      budget--;
      const { changes } = this.deleteOlder.run(cutoff, this.batch);
      deleted += changes;
      if (changes < this.batch) break;
    }
    for (const lbId of this.grown) {
      if (budget <= 0) break;
      budget--;
      const oldestToGo = this.nthNewest.get(lbId, this.keep) as string | undefined;
      if (oldestToGo === undefined) {
        this.grown.delete(lbId);
        continue;
      }
      while (budget > 0) {
        budget--;
        const { changes } = this.deleteLbUpTo.run(lbId, oldestToGo, this.batch);
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

  /** Prunes every intervalMs (unref'd) until close(). */
  startPruning(intervalMs: number): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => {
      try {
        const deleted = this.prune();
        if (deleted > 0) this.options.logger?.debug({ deleted }, 'events pruned');
      } catch (err) {
        this.options.logger?.warn({ err: String(err) }, 'pruning events failed');
      }
    }, intervalMs);
    this.timer.unref();
  }

  /** Stops pruning (the cluster-duties lease moved to another API process); startPruning resumes. */
  stopPruning(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Writes what is queued and stops; later events are ignored (the database closes next). */
  close(): void {
    this.stopPruning();
    this.flush();
    this.closed = true;
  }
}

function toRow(e: NewEvent, now: number): Row {
  return [
    newId('event', now),
    e.loadBalancerId,
    e.kind,
    new Date(now).toISOString(),
    e.summary.slice(0, 500),
    e.actor ? JSON.stringify(e.actor) : null,
    e.operation ?? null,
    e.resourceId ?? null,
    JSON.stringify(e.detail ?? {}),
  ];
}

function toApi(row: typeof lbEvents.$inferSelect): LoadBalancerEvent {
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
