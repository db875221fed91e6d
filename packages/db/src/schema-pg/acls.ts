import { index, json, pgTable, text } from 'drizzle-orm/pg-core';
import type { AclEntryRow } from '../schema/acls.js';
import { revision, timestamps } from './columns.js';

export const acls = pgTable(
  'acls',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    name: text('name').notNull(),
    entries: json('entries').$type<AclEntryRow[]>().notNull(),
    ...revision,
    ...timestamps,
  },
  (t) => [index('acls_tenant_idx').on(t.tenantId, t.id)],
);
