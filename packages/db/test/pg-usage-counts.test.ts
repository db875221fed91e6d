import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, runMigrations } from '@slb/db';
import { copySqliteToPg, type OpenPgDatabase, openPgDatabase, runPgMigrations } from '@slb/db/pg';
import { createTestPgDatabase, pgReachable, type TestPgDatabase } from '@slb/test-support/pg-database';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { populateEveryTable } from './pg-fixture.js';
import { addCountedRows, byKey, COUNTED_SQL, COUNTED_TABLES, KEPT_SQL } from './usage-count-queries.js';

// usage_counts on PostgreSQL (migrations-pg/0004): the triggers keep it equal to a real count, as SQLite's do,
// through the copy of a file with a row in every table, deletes with their cascades, L7 port changes and a
// rollback, on a real PostgreSQL 15; each test has its own database.

const reachable = await pgReachable('packages/db/test/pg-usage-counts.test.ts');
let dir: string;
let database: TestPgDatabase;
let target: OpenPgDatabase;
/** SQLite's kept counts of the fixture, before the copy. */
let sqliteKept: Record<string, number>;

async function rows(query: string): Promise<{ key: string; n: number | string }[]> {
  return (await target.client.query<{ key: string; n: number | string }>(query)).rows;
}
const counted = async (): Promise<Record<string, number>> => byKey(await rows(COUNTED_SQL));
const kept = async (): Promise<Record<string, number>> => byKey(await rows(KEPT_SQL));
const exec = async (query: string): Promise<void> => void (await target.client.query(query));

beforeEach(async () => {
  if (!reachable) return;
  dir = mkdtempSync(join(tmpdir(), 'slb-pg-usage-'));
  const sqlitePath = join(dir, 'slb.db');
  const store = openDatabase(sqlitePath);
  runMigrations(store.db, store.sqlite);
  populateEveryTable(store.db);
  addCountedRows(store.sqlite);
  sqliteKept = byKey(store.sqlite.prepare(KEPT_SQL).all() as never);
  store.close();
  database = await createTestPgDatabase();
  await copySqliteToPg({ from: sqlitePath, to: database.url });
  target = await openPgDatabase(database.url);
});

afterEach(async () => {
  if (!reachable) return;
  await target.close();
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!reachable)('usage_counts on PostgreSQL', () => {
  it('comes out of a copy equal to SQLite’s, made by the copied rows’ inserts', async () => {
    const full = await counted();
    expect(Object.keys(full).length).toBeGreaterThanOrEqual(Object.keys(COUNTED_TABLES).length + 3);
    expect(Object.values(full).some((n) => n > 1)).toBe(true);
    expect(await kept()).toEqual(full);
    expect(await kept()).toEqual(sqliteKept);
  });

  it('follows inserts, deletes and the cascades of deleting a load balancer', async () => {
    await exec(`INSERT INTO servers (id, tenant_id, server_group_id, address, port, weight, description, created_at, updated_at)
      SELECT 'srv-more-' || i, tenant_id, server_group_id, '192.0.2.' || i, port, weight, description, created_at, updated_at
      FROM servers, generate_series(1, 3) AS i WHERE id = 'srv-extra'`);
    expect(await kept()).toEqual(await counted());
    await exec("DELETE FROM servers WHERE id IN ('srv-extra', 'srv-more-1')");
    expect(await kept()).toEqual(await counted());
    // Every LB of the fixture's tenants: their listeners, rules, groups and servers go by cascade.
    await exec("DELETE FROM load_balancers WHERE tenant_id <> 'ten-other'");
    await exec('DELETE FROM certificates; DELETE FROM acls');
    expect(await kept()).toEqual({ 'ten-other/loadBalancers': 1 });
    expect(await counted()).toEqual({ 'ten-other/loadBalancers': 1 });
  });

  it('follows a listener taking or giving up its L7 port', async () => {
    const listeners = (await counted())['*/listeners'] ?? 0;
    expect((await counted())['*/l7Ports']).toBeGreaterThan(0);
    await exec('UPDATE listeners SET l7_port = NULL');
    expect((await kept())['*/l7Ports']).toBeUndefined();
    await exec(
      'UPDATE listeners AS l SET l7_port = 20000 + n.i FROM (SELECT id, row_number() OVER () AS i FROM listeners) AS n WHERE n.id = l.id',
    );
    expect((await kept())['*/l7Ports']).toBe(listeners);
    // A port moving from one number to another is no change in count.
    await exec('UPDATE listeners SET l7_port = l7_port + 100');
    expect(await kept()).toEqual(await counted());
  });

  it('rolls back with the write that moved it', async () => {
    const before = await kept();
    await exec('BEGIN');
    await exec('DELETE FROM servers; DELETE FROM load_balancers');
    expect(await kept()).not.toEqual(before);
    await exec('ROLLBACK');
    expect(await kept()).toEqual(before);
  });

  it('is counted from the rows by the migrations that add the triggers', async () => {
    // A database copied by an earlier build: no triggers (0004, 0005), no VIP offsets (0005), the counts as
    // SQLite kept them, here made wrong.
    await exec(`
      DROP FUNCTION load_balancers_usage_moved, load_balancers_pool_usage CASCADE;
      DROP FUNCTION listeners_l7_port_usage, listeners_usage_moved CASCADE;
      DROP FUNCTION usage_counts_moved CASCADE;
      DROP FUNCTION usage_counts_recount;
      DROP INDEX load_balancers_pool_idx;
      ALTER TABLE load_balancers DROP COLUMN address_offset;
      CREATE INDEX load_balancers_pool_idx ON load_balancers (address_pool_id);
      DELETE FROM drizzle.__drizzle_migrations WHERE id > (SELECT max(id) - 2 FROM drizzle.__drizzle_migrations);
      UPDATE usage_counts SET used = used + 7;
      DELETE FROM usage_counts WHERE name = 'servers';
      INSERT INTO usage_counts VALUES ('ten-gone', 'acls', 3);
    `);
    expect(await kept()).not.toEqual(await counted());
    expect(await runPgMigrations(target.db)).toBe(2);
    expect(await kept()).toEqual(await counted());
    await exec("DELETE FROM servers WHERE id = 'srv-extra'");
    expect(await kept()).toEqual(await counted());
  });

  it('has an insert and a delete trigger on every counted table', async () => {
    const triggers = (
      await target.client.query<{ name: string; t: string }>(
        'SELECT tgname AS name, tgrelid::regclass::text AS t FROM pg_trigger WHERE NOT tgisinternal',
      )
    ).rows;
    for (const table of Object.values(COUNTED_TABLES)) {
      expect(triggers).toContainEqual({ name: `${table}_usage_insert`, t: table });
      expect(triggers).toContainEqual({ name: `${table}_usage_delete`, t: table });
    }
    expect(triggers).toContainEqual({ name: 'listeners_l7_port_usage', t: 'listeners' });
    expect(triggers).toContainEqual({ name: 'load_balancers_pool_usage', t: 'load_balancers' });
  });
});
