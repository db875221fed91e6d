import { DEFAULT_LISTENER_MAX_CONNECTIONS, type HealthCheck, type StickySession } from '@slb/model';
import { sql } from 'drizzle-orm';
import { boolean, index, integer, json, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { acls } from './acls.js';
import { certificates } from './certificates.js';
import { revision, timestamps } from './columns.js';
import { loadBalancers } from './load-balancers.js';
import { serverGroups } from './server-groups.js';

export const listeners = pgTable(
  'listeners',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    loadBalancerId: text('load_balancer_id')
      .notNull()
      .references(() => loadBalancers.id, { onDelete: 'cascade' }),
    protocol: text('protocol', { enum: ['tcp', 'udp', 'http', 'https'] }).notNull(),
    transport: text('transport', { enum: ['tcp', 'udp'] }).notNull(),
    port: integer('port').notNull(),
    backendPort: integer('backend_port'),
    // NO ACTION, as in SQLite: PostgreSQL too checks it at the end of the statement, so deleting the LB
    // (which cascades to the listener and the group) passes while deleting a group in use does not.
    serverGroupId: text('server_group_id')
      .notNull()
      .references(() => serverGroups.id),
    scheduler: text('scheduler', { enum: ['wrr', 'wlc', 'rr', 'sch', 'tch'] }).notNull(),
    persistenceTimeout: integer('persistence_timeout').notNull(),
    stickySession: json('sticky_session').$type<StickySession | null>(),
    healthCheck: json('health_check').$type<HealthCheck>().notNull(),
    proxyProtocol: text('proxy_protocol', { enum: ['off', 'v1', 'v2'] }).notNull(),
    xForwardedFor: boolean('x_forwarded_for').notNull(),
    xForwardedForMode: text('x_forwarded_for_mode', { enum: ['replace', 'append'] })
      .notNull()
      .default('replace'),
    idleTimeout: integer('idle_timeout').notNull(),
    requestTimeout: integer('request_timeout'),
    connectionDrainTimeout: integer('connection_drain_timeout').notNull(),
    certificateId: text('certificate_id').references(() => certificates.id),
    additionalCertificateIds: json('additional_certificate_ids').$type<string[]>().notNull(),
    aclId: text('acl_id').references(() => acls.id),
    aclMode: text('acl_mode', { enum: ['allow', 'deny'] }),
    description: text('description').notNull(),
    maxConnections: integer('max_connections').notNull().default(DEFAULT_LISTENER_MAX_CONNECTIONS),
    status: text('status', { enum: ['running', 'stopped'] }).notNull(),
    l7Port: integer('l7_port'),
    ...revision,
    ...timestamps,
  },
  (t) => [
    uniqueIndex('listeners_port_uq').on(t.loadBalancerId, t.transport, t.port),
    index('listeners_sg_idx').on(t.serverGroupId),
    index('listeners_tenant_idx').on(t.tenantId),
    uniqueIndex('listeners_l7_port_uq').on(t.l7Port).where(sql`${t.l7Port} IS NOT NULL`),
  ],
);
