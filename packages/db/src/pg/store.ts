import { type SQL, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import * as pgSchema from '../schema-pg/index.js';
import {
  LockOutsideWrite,
  type Preparable,
  type Queries,
  type Store,
  StoreScope,
  type Tables,
  WriteInsideRead,
} from '../store.js';
import { type PgDb, runPgMigrations } from './migrate.js';

export interface PgStoreOptions {
  /** Connections in the pool (default 10): concurrent transactions beyond it wait for one. */
  max?: number;
  connectTimeoutMs?: number;
  /** Apply migrations-pg/ before use (default true); a SchemaTooNewError refuses a newer build's database. */
  migrate?: boolean;
}

/**
 * Migrates on one connection holding a session advisory lock: replicas started together on an empty database
 * migrate one after the other (the second finds nothing left to apply), not both at once.
 */
async function migrateAlone(pool: pg.Pool): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock(hashtext('slb:migrations'))");
    try {
      return await runPgMigrations(drizzle(client, { schema: pgSchema }));
    } finally {
      await client.query("SELECT pg_advisory_unlock(hashtext('slb:migrations'))");
    }
  } finally {
    client.release();
  }
}

/**
 * A store on PostgreSQL at `url`: a pool, reads on any connection, each write one transaction on one
 * connection (READ COMMITTED, PostgreSQL's default; what must not race locks its rows or relies on a key).
 */
export async function openPgStore(url: string, options: PgStoreOptions = {}): Promise<Store & { migrated: number }> {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
  });
  // An idle client's error (the server restarted) must not crash the process: the pool drops that client.
  pool.on('error', () => {});
  const db: PgDb = drizzle(pool, { schema: pgSchema });
  let migrated = 0;
  try {
    if (options.migrate !== false) migrated = await migrateAlone(pool);
  } catch (error) {
    await pool.end();
    throw error;
  }
  const scope = new StoreScope();
  const q = db as Queries;
  return {
    dialect: 'postgres',
    t: pgSchema as Tables,
    migrated,
    read: (work) => {
      const outer = scope.current();
      return outer ? work(outer.q) : scope.within(q, false, work);
    },
    prepare: <T>(name: string, build: (q: Queries) => Preparable<T>) => {
      const prepared = build(q).prepare(name);
      return (params: Record<string, unknown>) => {
        // Inside a write: the same statement, on the write's connection and transaction.
        const outer = scope.current();
        return outer ? build(outer.q).prepare(name).execute(params) : prepared.execute(params);
      };
    },
    write: (work) => {
      const outer = scope.current();
      if (outer && !outer.writing) return Promise.reject(new WriteInsideRead());
      // Inside a write, drizzle's nested transaction is a savepoint of it.
      const on = (outer?.q ?? db) as PgDb;
      return on.transaction((tx) => scope.within(tx, true, work));
    },
    lock: async (key) => {
      const outer = scope.current();
      if (!outer?.writing) throw new LockOutsideWrite();
      await (outer.q as PgDb).execute(sql`SELECT pg_advisory_xact_lock(hashtext(${key}))`);
    },
    rows: async <T>(on: Queries, query: SQL) => (await (on as PgDb).execute(query)).rows as T[],
    close: () => pool.end(),
  };
}
