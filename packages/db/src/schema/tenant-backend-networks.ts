import { sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { timestamps } from './columns.js';
import { tenants } from './tenants.js';

/** A tenant's own allowed backend networks; no row: the cloud's default applies. */
export const tenantBackendNetworks = sqliteTable('tenant_backend_networks', {
  tenantId: text('tenant_id')
    .primaryKey()
    .references(() => tenants.id, { onDelete: 'cascade' }),
  networks: text('networks', { mode: 'json' }).$type<string[]>().notNull(),
  ...timestamps,
});
