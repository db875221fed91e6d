import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type OpenDatabase, openDatabase, runMigrations, tenants } from '@slb/db';
import { CopyError, copySqliteToPg, pgSchema, type TableProgress } from '@slb/db/pg';
import {
  createTestPgDatabase,
  pgReachable,
  readEveryTable,
  readJsonText,
  type TestPgDatabase,
  withPgDb,
} from '@slb/test-support/pg-database';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { populateEveryTable } from './pg-fixture.js';

// The SQLite-to-PostgreSQL copy (npm run db:copy) against a real PostgreSQL 15, from a file with a row in
// every table; each test makes its own databases and drops them.

const reachable = await pgReachable('packages/db/test/pg-copy.test.ts');
const databases: TestPgDatabase[] = [];
let dir: string;
let sqlitePath: string;

async function freshDatabase(): Promise<TestPgDatabase> {
  const database = await createTestPgDatabase();
  databases.push(database);
  return database;
}

/** The source, opened again after the copy (the copy needs it closed, as a stopped API leaves it). */
function reopen(): OpenDatabase {
  return openDatabase(sqlitePath);
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'slb-pg-copy-'));
  sqlitePath = join(dir, 'slb.db');
  const store = openDatabase(sqlitePath);
  runMigrations(store.db, store.sqlite);
  populateEveryTable(store.db);
  store.close();
});

afterEach(async () => {
  for (const database of databases.splice(0)) await database.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!reachable)('copying SQLite into PostgreSQL', () => {
  it('copies every row of every table, each column read back equal', async () => {
    const target = await freshDatabase();
    const progress: TableProgress[] = [];
    const result = await copySqliteToPg({ from: sqlitePath, to: target.url, onProgress: (p) => progress.push(p) });

    expect(progress.map((p) => p.table)).toEqual(result.counts.map((c) => c.table));
    expect(
      result.counts.filter((c) => c.source === 0),
      'the fixture fills every table',
    ).toEqual([]);
    expect(result.counts.every((c) => c.source === c.target)).toBe(true);
    const store = reopen();
    try {
      const contents = await withPgDb(target.url, (db) => readEveryTable(store.db, db));
      for (const { table, sqlite, pg } of contents) expect(pg, table).toEqual(sqlite);
      expect(contents.reduce((n, c) => n + c.pg.length, 0)).toBe(result.rows);
      const json = await withPgDb(target.url, (db) => readJsonText(store.db, db));
      expect(json.length, 'every JSON column is compared').toBeGreaterThanOrEqual(10);
      for (const { column, sqlite, pg } of json) expect(pg, column).toEqual(sqlite);
    } finally {
      store.close();
    }
  });

  it('refuses a target that holds rows, and changes nothing in it', async () => {
    const target = await freshDatabase();
    await copySqliteToPg({ from: sqlitePath, to: target.url });
    const before = await withPgDb(target.url, (db) => db.select().from(pgSchema.tenants));
    const store = reopen();
    store.db.insert(tenants).values({ id: 'ten-new', name: 'new', createdAt: 'x', updatedAt: 'x' }).run();
    store.close();

    const refused = copySqliteToPg({ from: sqlitePath, to: target.url });
    await expect(refused).rejects.toBeInstanceOf(CopyError);
    await expect(refused).rejects.toThrow(/target database is not empty \(.*tenants: 2.*\): copy into a new, empty/);
    expect(await withPgDb(target.url, (db) => db.select().from(pgSchema.tenants))).toEqual(before);
  });

  it('copies one source twice, into two fresh databases, the same (whatever the batch size)', async () => {
    const [first, second] = [await freshDatabase(), await freshDatabase()];
    const a = await copySqliteToPg({ from: sqlitePath, to: first.url });
    // Two rows a batch: full batches take the prepared statement, a table's odd last row the other path.
    const b = await copySqliteToPg({ from: sqlitePath, to: second.url, batchRows: 2 });
    expect(b.counts).toEqual(a.counts);
    const store = reopen();
    try {
      const [one, two] = [
        await withPgDb(first.url, (db) => readEveryTable(store.db, db)),
        await withPgDb(second.url, (db) => readEveryTable(store.db, db)),
      ];
      expect(two).toEqual(one);
      for (const { table, sqlite, pg } of two) expect(pg, table).toEqual(sqlite);
    } finally {
      store.close();
    }
  });

  it('makes the kept counts by its inserts, and refuses a source whose kept counts differ from its rows', async () => {
    const store = reopen();
    // A server whose count SQLite did not keep, as a kept count gone wrong would leave it.
    store.sqlite.exec(`
      DROP TRIGGER servers_usage_insert;
      INSERT INTO servers (id, tenant_id, server_group_id, address, port, weight, description, created_at, updated_at)
        SELECT 'srv-uncounted', tenant_id, server_group_id, '192.0.2.201', port, weight, description, created_at, updated_at
        FROM servers LIMIT 1;
    `);
    const servers = store.sqlite
      .prepare(
        "SELECT tenant_id AS t, count(*) AS n FROM servers WHERE tenant_id = (SELECT tenant_id FROM servers WHERE id = 'srv-uncounted')",
      )
      .get() as { t: string; n: number };
    store.close();

    const target = await freshDatabase();
    const error = await copySqliteToPg({ from: sqlitePath, to: target.url }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CopyError);
    expect((error as Error).message).toBe(
      `usage_counts differs from the counts SQLite kept, nothing was committed (1: ${servers.t}/servers: ` +
        `${servers.n - 1} in SQLite, ${servers.n} in PostgreSQL)`,
    );
    expect(await withPgDb(target.url, (db) => db.select().from(pgSchema.usageCounts)), 'all or nothing').toEqual([]);
  });

  it('refuses a source a running API holds, saying to stop it', async () => {
    const target = await freshDatabase();
    const running = reopen();
    try {
      running.sqlite.prepare('SELECT count(*) FROM tenants').get(); // takes the exclusive lock, as the API does
      await expect(copySqliteToPg({ from: sqlitePath, to: target.url })).rejects.toThrow(
        /is locked by another process, most likely a running API .*stop it, then copy/,
      );
    } finally {
      running.close();
    }
  });

  it('keeps query parameters out of its errors: a failing insert names the constraint, not the values', async () => {
    const target = await freshDatabase();
    const store = reopen();
    // Breaks a foreign key the schema declares but SQLite was told not to check: PostgreSQL refuses the row.
    store.sqlite.pragma('foreign_keys = OFF');
    store.sqlite.prepare("UPDATE tokens SET tenant_id = 'ten-gone' WHERE id = 'tok-1'").run();
    store.close();

    const error = await copySqliteToPg({ from: sqlitePath, to: target.url }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CopyError);
    expect((error as Error).message).toMatch(/^copying tokens failed: .*foreign key.*tokens_tenant_id_tenants_id_fk/);
    expect((error as Error).message).not.toContain('a'.repeat(64));
    expect(await withPgDb(target.url, (db) => db.select().from(pgSchema.tenants)), 'all or nothing').toEqual([]);
  });
});
