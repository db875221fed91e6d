import { type Db, FLEET_SCOPE } from '@slb/db';
import { type SQL, sql } from 'drizzle-orm';

// Reads the counts usage_counts keeps (triggers, migrations/0012): one row, where counting the rows cost
// in proportion to the fleet on every create (issue #22).

/** The query for one kept count: a tenant's (scope = its id) or the fleet's (FLEET_SCOPE). */
export const keptCountQuery = (scope: string, name: string): SQL =>
  sql`SELECT used AS n FROM usage_counts WHERE scope = ${scope} AND name = ${name}`;

function keptCount(db: Db, scope: string, name: string): number {
  return db.get<{ n: number } | undefined>(keptCountQuery(scope, name))?.n ?? 0;
}

/** What the fleet holds: listeners of every tenant, and those of them served on an L7 port. */
export function fleetCount(db: Db, name: 'listeners' | 'l7Ports'): number {
  return keptCount(db, FLEET_SCOPE, name);
}

/** The load balancers holding a VIP from an address pool. */
export function poolAddressCount(db: Db, poolId: string): number {
  return keptCount(db, poolId, 'addresses');
}
