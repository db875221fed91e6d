import { SchemaTooNewError } from '@slb/db';
import { openPgDatabase, openPgStore, runPgMigrations } from '@slb/db/pg';
import { createTestPgDatabase, pgReachable, type TestPgDatabase } from '@slb/test-support/pg-database';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';

// migrations-pg/ against a real PostgreSQL 15: each test gets its own database, dropped after.

const reachable = await pgReachable('packages/db/test/pg-migrate.test.ts');
let database: TestPgDatabase | undefined;

afterEach(async () => {
  await database?.drop();
  database = undefined;
});

describe.skipIf(!reachable)('PostgreSQL migrations', () => {
  it('apply to an empty database: every table and index, the partial one with its condition', async () => {
    database = await createTestPgDatabase();
    const { db, close } = await openPgDatabase(database.url);
    try {
      expect(await runPgMigrations(db)).toBeGreaterThanOrEqual(1);
      const tables = await db.execute<{ tablename: string }>(
        sql`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`,
      );
      expect(tables.rows.map((r) => r.tablename)).toEqual([
        'acls',
        'address_holds',
        'address_pools',
        'certificates',
        'cluster',
        'idempotency_keys',
        'lb_events',
        'lb_placements',
        'listeners',
        'load_balancers',
        'nodes',
        'rules',
        'server_groups',
        'server_health',
        'servers',
        'tenant_backend_networks',
        'tenant_quotas',
        'tenants',
        'tokens',
        'usage_counts',
      ]);
      const partial = await db.execute<{ indexdef: string }>(
        sql`SELECT indexdef FROM pg_indexes WHERE indexname = 'listeners_l7_port_uq'`,
      );
      expect(partial.rows[0]?.indexdef).toMatch(/^CREATE UNIQUE INDEX .* WHERE \(l7_port IS NOT NULL\)$/);
      expect(await runPgMigrations(db), 'a second run applies nothing').toBe(0);
    } finally {
      await close();
    }
  });

  it('migrates once when replicas start together on an empty database: one applies, the others wait and find it done', async () => {
    database = await createTestPgDatabase();
    const url = database.url;
    const stores = await Promise.all([1, 2, 3].map(() => openPgStore(url, { max: 2 })));
    try {
      const applied = stores.map((s) => s.migrated).sort();
      expect(applied.slice(0, 2)).toEqual([0, 0]);
      expect(applied[2]).toBeGreaterThanOrEqual(1);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('refuses a database migrated by a newer build', async () => {
    database = await createTestPgDatabase();
    const { db, close } = await openPgDatabase(database.url);
    try {
      await runPgMigrations(db);
      await db.execute(
        sql`INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ('from-the-future', 4102444800000)`,
      );
      await expect(runPgMigrations(db)).rejects.toBeInstanceOf(SchemaTooNewError);
    } finally {
      await close();
    }
  });
});
