import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_MIGRATIONS_FOLDER, type OpenDatabase, openDatabase, runMigrations } from '@slb/db';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { populateEveryTable } from './pg-fixture.js';
import { addCountedRows, byKey, COUNTED_SQL, COUNTED_TABLES, KEPT_SQL } from './usage-count-queries.js';

// usage_counts keeps the counts a create is checked against, so it reads one row instead of counting the
// tenant's or the fleet's resources (issue #22). Triggers keep it; these tests hold it equal to a real count
// after a migration over existing rows, inserts, deletes, L7 port changes and foreign-key cascades, on a
// real SQLite file.

let dir: string;
let store: OpenDatabase;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'slb-tenant-usage-'));
  store = openDatabase(join(dir, 'slb.db'));
});

afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const count = (query: string): number => (store.sqlite.prepare(query).get() as { n: number }).n;

/** `scope/name` → count, from the resource tables themselves (zero counts left out). */
const counted = (): Record<string, number> => byKey(store.sqlite.prepare(COUNTED_SQL).all() as never);

/** `scope/name` → count, as usage_counts keeps it (zero counts left out). */
const kept = (): Record<string, number> => byKey(store.sqlite.prepare(KEPT_SQL).all() as never);

describe('usage_counts', () => {
  it('is seeded from the rows a database held before the migration that made it', () => {
    const older = join(dir, 'migrations');
    cpSync(DEFAULT_MIGRATIONS_FOLDER, older, { recursive: true });
    const journalPath = join(older, 'meta/_journal.json');
    const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { tag: string }[] };
    const made = journal.entries.findIndex((e) => e.tag.endsWith('_usage_counts'));
    expect(made).toBeGreaterThan(0);
    writeFileSync(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, made) }));
    runMigrations(store.db, store.sqlite, older);
    // The fixture writes today's columns: the one added after usage_counts (0015) is there while it writes.
    store.sqlite.exec('ALTER TABLE load_balancers ADD address_offset integer');
    populateEveryTable(store.db, { placements: false });
    store.sqlite.exec('ALTER TABLE load_balancers DROP COLUMN address_offset');
    addCountedRows(store.sqlite);

    expect(runMigrations(store.db, store.sqlite)).toBeGreaterThan(0);
    const before = counted();
    // Every tenant-wide count, the second tenant's LBs, and both of the fleet's.
    expect(Object.keys(before).length).toBeGreaterThanOrEqual(Object.keys(COUNTED_TABLES).length + 3);
    expect(before['*/l7Ports']).toBeGreaterThan(0);
    expect(kept()).toEqual(before);
  });

  it('follows inserts, deletes and the cascades of deleting a load balancer', () => {
    runMigrations(store.db, store.sqlite);
    populateEveryTable(store.db);
    addCountedRows(store.sqlite);
    const full = counted();
    expect(kept()).toEqual(full);
    expect(Object.values(full).some((n) => n > 1)).toBe(true);

    store.sqlite.exec("DELETE FROM servers WHERE id = 'srv-extra'");
    expect(kept()).toEqual(counted());
    // Every LB of the fixture's tenant: its listeners, rules, groups and their servers go by cascade.
    store.sqlite.exec("DELETE FROM load_balancers WHERE tenant_id <> 'ten-other'");
    store.sqlite.exec('DELETE FROM certificates; DELETE FROM acls');
    expect(kept()).toEqual({ 'ten-other/loadBalancers': 1 });
    expect(counted()).toEqual({ 'ten-other/loadBalancers': 1 });
  });

  it('follows a listener taking or giving up its L7 port', () => {
    runMigrations(store.db, store.sqlite);
    populateEveryTable(store.db);
    const ports = count('SELECT count(l7_port) AS n FROM listeners');
    expect(ports).toBeGreaterThan(0);
    store.sqlite.exec('UPDATE listeners SET l7_port = NULL');
    expect(kept()['*/l7Ports']).toBeUndefined();
    store.sqlite.exec('UPDATE listeners SET l7_port = 20000 + rowid');
    expect(kept()['*/l7Ports']).toBe(count('SELECT count(*) AS n FROM listeners'));
    // A port moving from one number to another is no change in count.
    store.sqlite.exec('UPDATE listeners SET l7_port = l7_port + 100');
    expect(kept()).toEqual(counted());
  });

  it("follows a load balancer's VIP pool: given at an upgrade, or none", () => {
    runMigrations(store.db, store.sqlite);
    populateEveryTable(store.db);
    addCountedRows(store.sqlite);
    const pooled = count('SELECT count(*) AS n FROM load_balancers WHERE address_pool_id IS NOT NULL');
    expect(pooled).toBeGreaterThan(0);
    expect(kept()['pool-1/addresses']).toBe(pooled);
    // The other tenant's LB has no VIP; the upgrade gives it one from the pool.
    store.sqlite.exec("UPDATE load_balancers SET address_pool_id = 'pool-1' WHERE id = 'lb-other'");
    expect(kept()['pool-1/addresses']).toBe(pooled + 1);
    // A change to anything else of the row is no change in count.
    store.sqlite.exec("UPDATE load_balancers SET name = 'renamed', address_pool_id = address_pool_id");
    expect(kept()).toEqual(counted());
    store.sqlite.exec('UPDATE load_balancers SET address_pool_id = NULL');
    expect(kept()['pool-1/addresses']).toBeUndefined();
    expect(kept()).toEqual(counted());
  });

  it('rolls back with the write that moved it', () => {
    runMigrations(store.db, store.sqlite);
    populateEveryTable(store.db);
    const before = kept();
    const failing = store.sqlite.transaction(() => {
      store.sqlite.exec("DELETE FROM servers; DELETE FROM acls WHERE id = 'no-such-acl'");
      throw new Error('the write fails after its deletes');
    });
    expect(() => failing()).toThrow('the write fails');
    expect(kept()).toEqual(before);
  });

  it('has an insert and a delete trigger on every counted table', () => {
    // A migration that rebuilds a table (drizzle-kit copies it into a new one) drops its triggers.
    runMigrations(store.db, store.sqlite);
    const triggers = store.sqlite
      .prepare("SELECT name, tbl_name AS t FROM sqlite_master WHERE type = 'trigger'")
      .all() as {
      name: string;
      t: string;
    }[];
    for (const table of Object.values(COUNTED_TABLES)) {
      expect(triggers).toContainEqual({ name: `${table}_usage_insert`, t: table });
      expect(triggers).toContainEqual({ name: `${table}_usage_delete`, t: table });
    }
    expect(triggers).toContainEqual({ name: 'listeners_l7_port_usage', t: 'listeners' });
    for (const change of ['insert', 'delete', 'update']) {
      expect(triggers).toContainEqual({ name: `load_balancers_pool_usage_${change}`, t: 'load_balancers' });
    }
  });
});
