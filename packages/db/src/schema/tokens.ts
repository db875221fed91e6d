import { index, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { timestamps } from './columns.js';
import { tenants } from './tenants.js';

/** API tokens. Only a SHA-256 of the secret is kept: tokens are 256-bit random, so no slow hash is needed. */
export const tokens = sqliteTable(
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
