import { AsyncLocalStorage } from 'node:async_hooks';
import type { SQL } from 'drizzle-orm';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import type { OpenDatabase } from './open.js';
import * as sqliteSchema from './schema/index.js';
import type * as pgSchema from './schema-pg/index.js';

/**
 * The data layer the API is moving onto (issue 23): one body of queries that runs on SQLite and on
 * PostgreSQL. Queries are written with drizzle's PostgreSQL builder types and awaited; on SQLite the same
 * calls go to drizzle's better-sqlite3 builder with the SQLite tables, whose method surface (select,
 * insert … returning, onConflictDoUpdate, update, delete) is the same and whose rows map to the same types
 * (schema-pg/parity.test.ts holds the two schemas together).
 */
export type Tables = typeof pgSchema;

/** What a store's work may call: the builders both engines share. Raw SQL goes through `Store.rows`. */
export type Queries = Pick<NodePgDatabase<Tables>, 'select' | 'selectDistinct' | 'insert' | 'update' | 'delete'>;

export type Dialect = 'sqlite' | 'postgres';

export interface Store {
  readonly dialect: Dialect;
  /** The engine's own table objects, typed as PostgreSQL's. */
  readonly t: Tables;
  /** Reads outside a transaction. On SQLite they wait for an open transaction, never seeing its rows. */
  read<T>(work: (q: Queries) => Promise<T>): Promise<T>;
  /**
   * One transaction: committed when `work` resolves, rolled back when it throws. `work` awaits only its
   * queries (on SQLite every other read and write waits for it, so a network call inside would stall them).
   */
  write<T>(work: (q: Queries) => Promise<T>): Promise<T>;
  /** A raw statement's rows, on the queries given (a transaction's, or the store's for a plain read). */
  rows<T>(q: Queries, query: SQL): Promise<T[]>;
  close(): Promise<void>;
}

/** Rows an insert, update or delete without `returning` touched, as either driver reports it. */
export function changedRows(result: unknown): number {
  const r = result as { changes?: number; rowCount?: number | null };
  return r.changes ?? r.rowCount ?? 0;
}

/**
 * Calls into a store from inside one of its own reads or writes would deadlock on SQLite and run outside
 * the transaction on PostgreSQL: both engines refuse them alike, so the mistake shows on the default one.
 */
export class NestedStoreCall extends Error {
  constructor() {
    super("a store read or write from inside another: pass the outer one's queries on instead");
  }
}

export class StoreGuard {
  private readonly open = new AsyncLocalStorage<{ open: boolean }>();

  async enter<T>(run: () => Promise<T>): Promise<T> {
    if (this.open.getStore()?.open) throw new NestedStoreCall();
    // The flag is turned off on exit: promises started inside and settled later are not "inside".
    const flag = { open: true };
    try {
      return await this.open.run(flag, run);
    } finally {
      flag.open = false;
    }
  }
}

/** One turn at a time, in arrival order. */
class Turns {
  private tail: Promise<void> = Promise.resolve();

  async take<T>(run: () => Promise<T>): Promise<T> {
    const before = this.tail;
    let done!: () => void;
    this.tail = new Promise((resolve) => {
      done = resolve;
    });
    await before;
    try {
      return await run();
    } finally {
      done();
    }
  }
}

/**
 * A store on the API's SQLite connection (`openDatabase`). One connection serves every request, so its
 * reads and writes take turns: a read never lands inside another request's open transaction.
 */
export function sqliteStore(open: OpenDatabase): Store {
  const q = open.db as unknown as Queries;
  const turns = new Turns();
  const guard = new StoreGuard();
  return {
    dialect: 'sqlite',
    t: sqliteSchema as unknown as Tables,
    read: (work) => guard.enter(() => turns.take(() => work(q))),
    write: (work) =>
      guard.enter(() =>
        turns.take(async () => {
          open.sqlite.exec('BEGIN IMMEDIATE');
          try {
            const result = await work(q);
            open.sqlite.exec('COMMIT');
            return result;
          } catch (error) {
            if (open.sqlite.inTransaction) open.sqlite.exec('ROLLBACK');
            throw error;
          }
        }),
      ),
    rows: async <T>(_q: Queries, query: SQL) => open.db.all<T>(query),
    close: async () => open.close(),
  };
}
