import type Database from 'better-sqlite3';

// The kept counts (usage_counts) and the counts they stand for, as SQL both engines run, so the SQLite and the
// PostgreSQL trigger tests hold the same thing.

/** The table each tenant-wide kept count counts, as the migrations name their triggers. */
export const COUNTED_TABLES: Record<string, string> = {
  loadBalancers: 'load_balancers',
  listeners: 'listeners',
  servers: 'servers',
  certificates: 'certificates',
  acls: 'acls',
};

/** `key` ('scope/name') and `n` for every non-zero count, counted from the resource tables themselves. */
export const COUNTED_SQL = [
  ...Object.entries(COUNTED_TABLES).map(
    ([name, table]) => `SELECT tenant_id || '/${name}' AS key, count(*) AS n FROM ${table} GROUP BY tenant_id`,
  ),
  `SELECT '*/listeners' AS key, count(*) AS n FROM listeners HAVING count(*) > 0`,
  `SELECT '*/l7Ports' AS key, count(l7_port) AS n FROM listeners HAVING count(l7_port) > 0`,
  `SELECT address_pool_id || '/addresses' AS key, count(*) AS n FROM load_balancers
     WHERE address_pool_id IS NOT NULL GROUP BY address_pool_id`,
].join(' UNION ALL ');

/** `key` and `n` for every non-zero count usage_counts keeps. */
export const KEPT_SQL = `SELECT scope || '/' || name AS key, used AS n FROM usage_counts WHERE used <> 0`;

/** The rows of either query as `key` → count (PostgreSQL gives a bigint count as a string). */
export function byKey(rows: readonly { key: string; n: number | string }[]): Record<string, number> {
  return Object.fromEntries(rows.map((r) => [r.key, Number(r.n)]));
}

/** A second server in the fixture's group, and a second tenant's LB: counts above one, and per tenant. */
export function addCountedRows(sqlite: Database.Database): void {
  sqlite.exec(`
    INSERT INTO servers (id, tenant_id, server_group_id, address, port, weight, description, created_at, updated_at)
      SELECT 'srv-extra', tenant_id, server_group_id, '192.0.2.200', port, weight, description, created_at, updated_at
      FROM servers LIMIT 1;
    INSERT INTO tenants (id, name, created_at, updated_at) SELECT 'ten-other', 'other', created_at, updated_at FROM tenants LIMIT 1;
  `);
  const lb = sqlite.prepare('SELECT * FROM load_balancers LIMIT 1').get() as Record<string, unknown>;
  const columns = Object.keys(lb);
  const values = { ...lb, id: 'lb-other', tenant_id: 'ten-other', name: 'other', address: null, address_pool_id: null };
  sqlite
    .prepare(`INSERT INTO load_balancers (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`)
    .run(values);
}
