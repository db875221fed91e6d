import { index, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { tenants } from './tenants.js';

/** API tokens: only a SHA-256 of the secret, as in SQLite. */
export const tokens = pgTable(
  'tokens',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    role: text('role', { enum: ['admin', 'member'] }).notNull(),
    secretHash: text('secret_hash').notNull().unique(),
    lastUsedAt: text('last_used_at'),
    ...timestamps,
  },
  (t) => [index('tokens_tenant_idx').on(t.tenantId)],
);
