import { index, pgTable, text } from 'drizzle-orm/pg-core';
import { addressPools } from './address-pools.js';

export const addressHolds = pgTable(
  'address_holds',
  {
    address: text('address').primaryKey(),
    poolId: text('pool_id')
      .notNull()
      .references(() => addressPools.id, { onDelete: 'cascade' }),
    tenantId: text('tenant_id').notNull(),
    holdUntil: text('hold_until').notNull(),
  },
  (t) => [index('address_holds_pool_idx').on(t.poolId)],
);
