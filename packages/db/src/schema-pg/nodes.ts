import { bigint, boolean, doublePrecision, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { revision, timestamps } from './columns.js';

export const nodes = pgTable(
  'nodes',
  {
    id: text('id').primaryKey(),
    name: text('name'),
    kind: text('kind', { enum: ['l4', 'l7'] }).notNull(),
    address: text('address').notNull(),
    capacityWeight: integer('capacity_weight').notNull().default(100),
    drain: boolean('drain').notNull().default(false),
    /** Follows load_balancers.config_version: bigint like it. */
    appliedConfigVersion: bigint('applied_config_version', { mode: 'number' }).notNull().default(0),
    lastHeartbeatAt: text('last_heartbeat_at'),
    lastError: text('last_error'),
    vipMode: text('vip_mode', { enum: ['active-active', 'active-standby'] }),
    /** Reported by the node, bounded by nothing the API checks: bigint. */
    activeConnections: bigint('active_connections', { mode: 'number' }).notNull().default(0),
    // SQLite's REAL is an 8-byte float; PostgreSQL's `real` has 4 bytes and would round the rates.
    newConnectionsPerSecond: doublePrecision('new_connections_per_second').notNull().default(0),
    requestsPerSecond: doublePrecision('requests_per_second').notNull().default(0),
    credentialHash: text('credential_hash'),
    joinTokenHash: text('join_token_hash'),
    joinTokenExpiresAt: text('join_token_expires_at'),
    ...revision,
    ...timestamps,
  },
  (t) => [
    uniqueIndex('nodes_credential_hash_idx').on(t.credentialHash),
    uniqueIndex('nodes_join_token_hash_idx').on(t.joinTokenHash),
  ],
);
