import { integer, real, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { revision, timestamps } from './columns.js';

export const nodes = sqliteTable('nodes', {
  id: text('id').primaryKey(),
  kind: text('kind', { enum: ['l4', 'l7'] }).notNull(),
  address: text('address').notNull(),
  capacityWeight: integer('capacity_weight').notNull().default(100),
  drain: integer('drain', { mode: 'boolean' }).notNull().default(false),
  appliedConfigVersion: integer('applied_config_version').notNull().default(0),
  lastHeartbeatAt: text('last_heartbeat_at'),
  lastError: text('last_error'),
  activeConnections: integer('active_connections').notNull().default(0),
  newConnectionsPerSecond: real('new_connections_per_second').notNull().default(0),
  requestsPerSecond: real('requests_per_second').notNull().default(0),
  ...revision,
  ...timestamps,
});
