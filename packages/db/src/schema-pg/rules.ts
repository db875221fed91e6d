import { index, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { revision, timestamps } from './columns.js';
import { listeners } from './listeners.js';
import { serverGroups } from './server-groups.js';

export const rules = pgTable(
  'rules',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    listenerId: text('listener_id')
      .notNull()
      .references(() => listeners.id, { onDelete: 'cascade' }),
    domain: text('domain'),
    path: text('path'),
    serverGroupId: text('server_group_id')
      .notNull()
      .references(() => serverGroups.id),
    priority: integer('priority').notNull(),
    ...revision,
    ...timestamps,
  },
  (t) => [index('rules_listener_idx').on(t.listenerId, t.id), index('rules_sg_idx').on(t.serverGroupId)],
);
