import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { timestamps } from './columns.js';
import { tenants } from './tenants.js';

/**
 * An admin's override of one quota for one tenant. Only overrides are stored: a quota without a row
 * follows the deployment's default, so changing the default moves every tenant that was not singled out.
 */
export const tenantQuotas = sqliteTable(
  'tenant_quotas',
  {
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    limit: integer('limit').notNull(),
    ...timestamps,
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.name] })],
);
