import { pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';

export const addressPools = pgTable(
  'address_pools',
  {
    id: text('id').primaryKey(),
    cidr: text('cidr').notNull(),
    description: text('description').notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex('address_pools_cidr_uq').on(t.cidr)],
);
