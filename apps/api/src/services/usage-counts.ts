import { FLEET_SCOPE, type Store } from '@slb/db';
import { type SQL, sql } from 'drizzle-orm';

// Reads the counts usage_counts keeps (triggers, migrations/0012): one row, where counting the rows cost
// in proportion to the fleet on every create (issue #22).

/** The query for one kept count: a tenant's (scope = its id) or the fleet's (FLEET_SCOPE). */
export const keptCountQuery = (scope: string, name: string): SQL =>
  sql`SELECT used AS n FROM usage_counts WHERE scope = ${scope} AND name = ${name}`;

/**
 * The number in column `n` of a query's first row, 0 without one. PostgreSQL gives count(*), sum and
 * bigint back as text: read as a number here, as SQLite gives them.
 */
export async function countWith(store: Store, query: SQL): Promise<number> {
  const [row] = await store.read((q) => store.rows<{ n: number | string | null }>(q, query));
  return Number(row?.n ?? 0);
}

/** What the fleet holds: listeners of every tenant, and those of them served on an L7 port. */
export function fleetCount(store: Store, name: 'listeners' | 'l7Ports'): Promise<number> {
  return countWith(store, keptCountQuery(FLEET_SCOPE, name));
}

/** The load balancers holding a VIP from an address pool. */
export function poolAddressCount(store: Store, poolId: string): Promise<number> {
  return countWith(store, keptCountQuery(poolId, 'addresses'));
}
