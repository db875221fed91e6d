import { index, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { revision, timestamps } from './columns.js';

export interface AclEntryRow {
  cidr: string;
  description: string;
}

export const acls = sqliteTable(
  'acls',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    name: text('name').notNull(),
    entries: text('entries', { mode: 'json' }).$type<AclEntryRow[]>().notNull(),
    ...revision,
    ...timestamps,
  },
  (t) => [index('acls_tenant_idx').on(t.tenantId, t.id)],
);
