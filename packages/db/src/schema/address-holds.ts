import { index, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { addressPools } from './address-pools.js';

/**
 * VIPs of deleted load balancers, held back from other tenants until `holdUntil`: clients and DNS caches
 * still send traffic there for a while, which must not reach someone else's backends. The tenant that held
 * it may take it back by asking for it. Rows past their time are deleted when the next VIP is allocated.
 */
export const addressHolds = sqliteTable(
  'address_holds',
  {
    address: text('address').primaryKey(),
    poolId: text('pool_id')
      .notNull()
      .references(() => addressPools.id, { onDelete: 'cascade' }),
    tenantId: text('tenant_id').notNull(),
    /** RFC 3339, compared as text with nowIso(). */
    holdUntil: text('hold_until').notNull(),
  },
  (t) => [index('address_holds_pool_idx').on(t.poolId)],
);
