import { integer, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { revision, timestamps } from './columns.js';

export const nodes = sqliteTable(
  'nodes',
  {
    id: text('id').primaryKey(),
    /** The admin's name for it (e.g. the local cloud's `l4-node-1`); ids are allocated by the API. */
    name: text('name'),
    kind: text('kind', { enum: ['l4', 'l7'] }).notNull(),
    address: text('address').notNull(),
    capacityWeight: integer('capacity_weight').notNull().default(100),
    drain: integer('drain', { mode: 'boolean' }).notNull().default(false),
    appliedConfigVersion: integer('applied_config_version').notNull().default(0),
    lastHeartbeatAt: text('last_heartbeat_at'),
    lastError: text('last_error'),
    /** How it serves VIPs, as it last reported: null until it connects after the upgrade that added VIPs. */
    vipMode: text('vip_mode', { enum: ['active-active', 'active-standby'] }),
    activeConnections: integer('active_connections').notNull().default(0),
    newConnectionsPerSecond: real('new_connections_per_second').notNull().default(0),
    requestsPerSecond: real('requests_per_second').notNull().default(0),
    /** SHA-256 of the node's own credential; the credential itself is only ever on the node. */
    credentialHash: text('credential_hash'),
    /** SHA-256 of an unused one-time join token, and when it stops being accepted. */
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
