import { json, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { tenants } from './tenants.js';

export const tenantBackendNetworks = pgTable('tenant_backend_networks', {
  tenantId: text('tenant_id')
    .primaryKey()
    .references(() => tenants.id, { onDelete: 'cascade' }),
  networks: json('networks').$type<string[]>().notNull(),
  ...timestamps,
});
