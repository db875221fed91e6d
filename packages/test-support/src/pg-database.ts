import { randomBytes } from 'node:crypto';
import type { Db } from '@slb/db';
import { openPgDatabase, type PgDb, tablesInForeignKeyOrder } from '@slb/db/pg';
import { type Column, getTableColumns, sql } from 'drizzle-orm';
import pg from 'pg';

/**
 * The PostgreSQL the tests use: the machine's (127.0.0.1:5432, trust auth, user postgres; CI has one too).
 * SLB_TEST_PG_URL points them at another server; its database is only used to create and drop others.
 */
export const PG_ADMIN_URL = process.env.SLB_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 3_000 });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/**
 * Whether PostgreSQL answers. Unreachable in CI (CI=true) throws, failing the file with the reason;
 * elsewhere it prints one line and the file's tests skip.
 */
export async function pgReachable(file: string): Promise<boolean> {
  try {
    await adminQuery('SELECT 1');
    return true;
  } catch (error) {
    const reason = `PostgreSQL at ${PG_ADMIN_URL.replace(/:[^:@/]*@/, ':***@')} is unreachable (${(error as Error).message})`;
    if (process.env.CI === 'true') throw new Error(`${reason}: CI must run ${file} against a real PostgreSQL 15`);
    console.log(`skipped ${file}: ${reason}`);
    return false;
  }
}

export interface TestPgDatabase {
  name: string;
  /** Connection string of the new, empty database. */
  url: string;
  /** Drops it, closing whatever connections are left. */
  drop(): Promise<void>;
}

/** A fresh database `slb_test_<random>` for one test; drop it in afterEach/finally. */
export async function createTestPgDatabase(): Promise<TestPgDatabase> {
  const name = `slb_test_${randomBytes(6).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    drop: () => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** Runs `use` with drizzle on a fresh connection to `url`, closed afterwards. */
export async function withPgDb<T>(url: string, use: (db: PgDb) => Promise<T>): Promise<T> {
  const open = await openPgDatabase(url);
  try {
    return await use(open.db);
  } finally {
    await open.close();
  }
}

export interface TableContents {
  table: string;
  sqlite: Record<string, unknown>[];
  pg: Record<string, unknown>[];
}

/**
 * Every row of every table as drizzle reads it from each database (JS values: booleans, parsed JSON, numbers),
 * in one order for both (sorted by the row's JSON: PostgreSQL's collation may order text unlike SQLite).
 */
export async function readEveryTable(sqliteDb: Db, pgDb: PgDb): Promise<TableContents[]> {
  const sorted = (rows: Record<string, unknown>[]) =>
    rows
      .map((row) => [JSON.stringify(row), row] as const)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, row]) => row);
  const contents: TableContents[] = [];
  for (const table of tablesInForeignKeyOrder()) {
    const fromSqlite = sqliteDb.select().from(table.sqlite).all() as Record<string, unknown>[];
    const fromPg = (await pgDb.select().from(table.pg)) as Record<string, unknown>[];
    contents.push({ table: table.name, sqlite: sorted(fromSqlite), pg: sorted(fromPg) });
  }
  return contents;
}

/**
 * Each JSON column's stored text, per table and column, from both databases: drizzle's PostgreSQL json column
 * parses a string it reads back, so a value stored as a JSON string would still read back as the object;
 * the text shows it.
 */
export async function readJsonText(
  sqliteDb: Db,
  pgDb: PgDb,
): Promise<{ column: string; sqlite: (string | null)[]; pg: (string | null)[] }[]> {
  const found: { column: string; sqlite: (string | null)[]; pg: (string | null)[] }[] = [];
  for (const table of tablesInForeignKeyOrder()) {
    for (const column of Object.values(getTableColumns(table.sqlite)) as Column[]) {
      if (column.columnType !== 'SQLiteTextJson') continue;
      const fromSqlite = sqliteDb
        .all<{ v: string | null }>(sql`SELECT ${sql.identifier(column.name)} AS v FROM ${sql.identifier(table.name)}`)
        .map((r) => r.v);
      const fromPg = await pgDb.execute<{ v: string | null }>(
        sql`SELECT ${sql.identifier(column.name)}::text AS v FROM ${sql.identifier(table.name)}`,
      );
      const sort = (values: (string | null)[]) => values.map((v) => v ?? '\u0000null').sort();
      found.push({
        column: `${table.name}.${column.name}`,
        sqlite: sort(fromSqlite),
        pg: sort(fromPg.rows.map((r) => r.v)),
      });
    }
  }
  return found;
}
