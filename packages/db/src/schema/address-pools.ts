import { sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { timestamps } from './columns.js';

/** The L4 cluster's VIP pools (admin-managed); load balancers get their address from one. */
export const addressPools = sqliteTable(
  'address_pools',
  {
    id: text('id').primaryKey(),
    /** Canonical spelling (formatNetwork), so one network is never stored twice under two spellings. */
    cidr: text('cidr').notNull(),
    description: text('description').notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex('address_pools_cidr_uq').on(t.cidr)],
);
