import { integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { tenants } from './tenants.js';

export const tenantQuotas = pgTable(
  'tenant_quotas',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** Bounded by each quota's ceiling (@slb/model quota.ts), far below 2^31. */
    limit: integer('limit').notNull(),
    ...timestamps,
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.name] })],
);
