import { pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { listeners } from './listeners.js';
import { servers } from './server-groups.js';

export const serverHealth = pgTable(
  'server_health',
  {
    listenerId: text('listener_id')
      .notNull()
      .references(() => listeners.id, { onDelete: 'cascade' }),
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id, { onDelete: 'cascade' }),
    status: text('status', { enum: ['normal', 'abnormal'] }).notNull(),
    since: text('since').notNull(),
    lastError: text('last_error'),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.listenerId, t.serverId] })],
);
