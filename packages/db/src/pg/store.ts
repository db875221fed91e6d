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
  // Nor a checked-out client's (a write's, between two of its queries): its queries fail with the error
  // anyway and the pool drops it on release, but with no listener of its own pg's 'error' event was thrown,
  // and a PostgreSQL restart stopped every replica that held a transaction open.
  pool.on('connect', (client) => client.on('error', () => {}));
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
  /** drizzle on each pooled connection, made once: a write runs its transaction on the one it checked out. */
  const onClient = new WeakMap<pg.PoolClient, PgDb>();
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
    write: async (work) => {
      const outer = scope.current();
      if (outer && !outer.writing) throw new WriteInsideRead();
      // Inside a write, drizzle's nested transaction is a savepoint of it.
      if (outer) return (outer.q as PgDb).transaction((tx) => scope.within(tx, true, work));
      // The connection is checked out and given back here, not by drizzle: drizzle sends BEGIN before its
      // try, so a connection whose server had just gone (a PostgreSQL restart) failed there and was never
      // given back; once every connection of the pool was lost so, no write got one again.
      const client = await pool.connect();
      try {
        let on = onClient.get(client);
        if (!on) {
          on = drizzle(client, { schema: pgSchema });
          onClient.set(client, on);
        }
        return await on.transaction((tx) => scope.within(tx, true, work));
      } finally {
        client.release();
      }
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
