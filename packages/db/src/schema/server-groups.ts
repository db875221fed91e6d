import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { revision, timestamps } from './columns.js';
import { loadBalancers } from './load-balancers.js';

export const serverGroups = sqliteTable(
  'server_groups',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    loadBalancerId: text('load_balancer_id')
      .notNull()
      .references(() => loadBalancers.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    ...revision,
    ...timestamps,
  },
  (t) => [index('server_groups_lb_idx').on(t.loadBalancerId, t.id)],
);

export const servers = sqliteTable(
  'servers',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    serverGroupId: text('server_group_id')
      .notNull()
      .references(() => serverGroups.id, { onDelete: 'cascade' }),
    address: text('address').notNull(),
    port: integer('port').notNull(),
    weight: integer('weight').notNull(),
    description: text('description').notNull(),
    ...revision,
    ...timestamps,
  },
  (t) => [
    uniqueIndex('servers_endpoint_uq').on(t.serverGroupId, t.address, t.port),
    // The backends quota counts a tenant's servers by group (the servers quota reads usage_counts).
    index('servers_tenant_idx').on(t.tenantId),
  ],
);
