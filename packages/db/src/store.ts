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

/** A query drizzle can prepare: a select with `sql.placeholder`s, say. */
export interface Preparable<T> {
  prepare(name: string): { execute(params?: Record<string, unknown>): Promise<T> };
}

/** A prepared query's runner: the placeholders' values in, its result out. */
export type PreparedRun<T> = (params: Record<string, unknown>) => Promise<T>;

export interface Store {
  readonly dialect: Dialect;
  /** The engine's own table objects, typed as PostgreSQL's. */
  readonly t: Tables;
  /**
   * Reads outside a transaction (inside a write: on its transaction). On SQLite they wait for another
   * call's open transaction, never seeing its rows.
   */
  read<T>(work: (q: Queries) => Promise<T>): Promise<T>;
  /**
   * One transaction: committed when `work` resolves, rolled back when it throws (inside another write: a
   * savepoint of it). `work` awaits only its queries: on SQLite every other call waits for it, so a
   * network call inside would stall them.
   */
  write<T>(work: (q: Queries) => Promise<T>): Promise<T>;
  /**
   * A read on the hot path, built once and run many times (the query builder costs more than SQLite's
   * lookup): on SQLite one prepared statement, on PostgreSQL a named one. Inside a write it reads on the
   * write's transaction. `name` is unique per query.
   */
  prepare<T>(name: string, build: (q: Queries) => Preparable<T>): PreparedRun<T>;
  /**
   * Holds `key` until the enclosing write ends, so writers that take the same key run one after another: a
   * PostgreSQL advisory transaction lock (other connections, other replicas). SQLite's writes take turns
   * already. Only inside a write.
   */
  lock(key: string): Promise<void>;
  /** A raw statement's rows, on the queries given (a transaction's, or the store's for a plain read). */
  rows<T>(q: Queries, query: SQL): Promise<T[]>;
  close(): Promise<void>;
}

/** Rows an insert, update or delete without `returning` touched, as either driver reports it. */
export function changedRows(result: unknown): number {
  const r = result as { changes?: number; rowCount?: number | null };
  return r.changes ?? r.rowCount ?? 0;
}

/** A lock asked for outside a write: it would be released at once. */
export class LockOutsideWrite extends Error {
  constructor() {
    super('a store lock outside a write: it lasts as long as the write that takes it');
  }
}

/** A write asked for inside a read: the read is not a transaction, so the write could not be part of it. */
export class WriteInsideRead extends Error {
  constructor() {
    super('a store write from inside a read: make the outer call a write');
  }
}

interface OpenScope {
  open: boolean;
  q: Queries;
  writing: boolean;
}

/**
 * Which store call the running code is inside. A read or write from inside a write joins it (a write as a
 * savepoint: its failure undoes its own rows only), so services compose: an idempotent create wraps the
 * service's own write in the one transaction that also stores the response.
 */
export class StoreScope {
  private readonly scopes = new AsyncLocalStorage<OpenScope>();

  current(): OpenScope | undefined {
    const scope = this.scopes.getStore();
    return scope?.open ? scope : undefined;
  }

  async within<T>(q: Queries, writing: boolean, work: (q: Queries) => Promise<T>): Promise<T> {
    // Closed on exit: a promise started inside and settled after it is outside, and takes its own turn.
    const scope = { open: true, q, writing };
    try {
      return await this.scopes.run(scope, () => work(q));
    } finally {
      scope.open = false;
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
  const scope = new StoreScope();
  let savepoints = 0;
  const exec = (statement: string) => open.sqlite.exec(statement);
  const transaction = async <T>(begin: string, commit: string, undo: string[], work: () => Promise<T>) => {
    exec(begin);
    try {
      const result = await work();
      exec(commit);
      return result;
    } catch (error) {
      if (open.sqlite.inTransaction) for (const statement of undo) exec(statement);
      throw error;
    }
  };
  const read: Store['read'] = (work) => {
    const outer = scope.current();
    if (outer) return work(outer.q);
    return turns.take(() => scope.within(q, false, work));
  };
  return {
    dialect: 'sqlite',
    t: sqliteSchema as unknown as Tables,
    read,
    prepare: <T>(name: string, build: (q: Queries) => Preparable<T>) => {
      let prepared: ReturnType<Preparable<T>['prepare']> | undefined;
      return (params: Record<string, unknown>) => {
        prepared ??= build(q).prepare(name);
        const statement = prepared;
        return read(() => statement.execute(params));
      };
    },
    write: (work) => {
      const outer = scope.current();
      if (outer && !outer.writing) return Promise.reject(new WriteInsideRead());
      const savepoint = <T>(run: () => Promise<T>) => {
        const name = `s${++savepoints}`;
        return transaction(`SAVEPOINT ${name}`, `RELEASE ${name}`, [`ROLLBACK TO ${name}`, `RELEASE ${name}`], run);
      };
      if (outer) return savepoint(() => work(q));
      return turns.take(() => {
        const run = () => scope.within(q, true, work);
        // A transaction opened on the connection by synchronous code (a test's BEGIN … ROLLBACK around a
        // request) is the outer one: this write is a savepoint of it.
        if (open.sqlite.inTransaction) return savepoint(run);
        return transaction('BEGIN IMMEDIATE', 'COMMIT', ['ROLLBACK'], run);
      });
    },
    lock: async () => {
      if (!scope.current()?.writing) throw new LockOutsideWrite();
    },
    rows: async <T>(_q: Queries, query: SQL) => open.db.all<T>(query),
    close: async () => open.close(),
  };
}
