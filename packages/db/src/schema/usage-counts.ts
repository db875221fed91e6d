import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** The `scope` of the deployment's own counts: not a tenant id (those are `tenant_…`). */
export const FLEET_SCOPE = '*';

/**
 * Counts a write is checked against, kept so that the check reads one row instead of counting rows, which
 * costs in proportion to the fleet (issue #22: 0.7 ms a server create at 100,000 servers). `scope` is a
 * tenant id, with `name` one of its tenant-wide quotas (loadBalancers, listeners, servers, certificates,
 * acls), or FLEET_SCOPE, with `name` listeners (every tenant's) or l7Ports (listeners holding an L7 port),
 * or an address pool's id, with `name` addresses (its load balancers with a VIP from it, migrations/0015).
 * Triggers keep it (migrations/0012): every insert, delete and L7 port change, cascades included, in the
 * transaction of the write, so no code path can forget it. No foreign key, like the resource tables it
 * counts: tenants are never deleted, and resources do not move between tenants.
 */
export const usageCounts = sqliteTable(
  'usage_counts',
  {
    scope: text('scope').notNull(),
    name: text('name').notNull(),
    used: integer('used').notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.name] })],
);
