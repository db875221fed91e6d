import { DEFAULT_LISTENER_MAX_CONNECTIONS, type HealthCheck, type StickySession } from '@slb/model';
import { sql } from 'drizzle-orm';
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { acls } from './acls.js';
import { certificates } from './certificates.js';
import { revision, timestamps } from './columns.js';
import { loadBalancers } from './load-balancers.js';
import { serverGroups } from './server-groups.js';

export const listeners = sqliteTable(
  'listeners',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    loadBalancerId: text('load_balancer_id')
      .notNull()
      .references(() => loadBalancers.id, { onDelete: 'cascade' }),
    protocol: text('protocol', { enum: ['tcp', 'udp', 'http', 'https'] }).notNull(),
    /** tcp or udp: a frontend port is unique per load balancer and transport. */
    transport: text('transport', { enum: ['tcp', 'udp'] }).notNull(),
    port: integer('port').notNull(),
    backendPort: integer('backend_port'),
    // No ON DELETE action: a referenced group, certificate or ACL cannot go while a listener uses it,
    // yet deleting the whole LB (which cascades to both) is checked only at the end of the statement.
    serverGroupId: text('server_group_id')
      .notNull()
      .references(() => serverGroups.id),
    scheduler: text('scheduler', { enum: ['wrr', 'wlc', 'rr', 'sch', 'tch'] }).notNull(),
    persistenceTimeout: integer('persistence_timeout').notNull(),
    stickySession: text('sticky_session', { mode: 'json' }).$type<StickySession | null>(),
    healthCheck: text('health_check', { mode: 'json' }).$type<HealthCheck>().notNull(),
    proxyProtocol: text('proxy_protocol', { enum: ['off', 'v1', 'v2'] }).notNull(),
    xForwardedFor: integer('x_forwarded_for', { mode: 'boolean' }).notNull(),
    xForwardedForMode: text('x_forwarded_for_mode', { enum: ['replace', 'append'] })
      .notNull()
      .default('replace'),
    idleTimeout: integer('idle_timeout').notNull(),
    requestTimeout: integer('request_timeout'),
    connectionDrainTimeout: integer('connection_drain_timeout').notNull(),
    certificateId: text('certificate_id').references(() => certificates.id),
    additionalCertificateIds: text('additional_certificate_ids', { mode: 'json' }).$type<string[]>().notNull(),
    aclId: text('acl_id').references(() => acls.id),
    aclMode: text('acl_mode', { enum: ['allow', 'deny'] }),
    description: text('description').notNull(),
    /** Concurrent connections or flows per node; the default fills the rows that predate the column. */
    maxConnections: integer('max_connections').notNull().default(DEFAULT_LISTENER_MAX_CONNECTIONS),
    status: text('status', { enum: ['running', 'stopped'] }).notNull(),
    /** http/https: the port the L7 nodes serve it on, allocated at create; null for tcp/udp. */
    l7Port: integer('l7_port'),
    ...revision,
    ...timestamps,
  },
  (t) => [
    uniqueIndex('listeners_port_uq').on(t.loadBalancerId, t.transport, t.port),
    index('listeners_sg_idx').on(t.serverGroupId),
    // The tenant-wide listeners and backends quotas count a tenant's listeners on every listener create:
    // without it each count read every listener row of the fleet.
    index('listeners_tenant_idx').on(t.tenantId),
    uniqueIndex('listeners_l7_port_uq').on(t.l7Port).where(sql`${t.l7Port} IS NOT NULL`),
  ],
);
