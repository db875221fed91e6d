import { primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { listeners } from './listeners.js';
import { servers } from './server-groups.js';

/**
 * Last known health of each (listener, server) target, as reported by the health-check fleet.
 * No row means not checked yet; the API shows that (and stopped listeners or disabled checks) as `unavailable`.
 */
export const serverHealth = sqliteTable(
  'server_health',
  {
    listenerId: text('listener_id')
      .notNull()
      .references(() => listeners.id, { onDelete: 'cascade' }),
    serverId: text('server_id')
      .notNull()
      .references(() => servers.id, { onDelete: 'cascade' }),
    status: text('status', { enum: ['normal', 'abnormal'] }).notNull(),
    /** When the target entered this status (RFC 3339). */
    since: text('since').notNull(),
    lastError: text('last_error'),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.listenerId, t.serverId] })],
);
