import { EVENT_KINDS, type LoadBalancerEvent } from '@slb/model';
import { index, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { loadBalancers } from './load-balancers.js';

/**
 * What happened to a load balancer (GET /v1/load-balancers/{lbId}/events): API changes, health transitions,
 * nodes joining and leaving, bind failures. Ids are time-ordered (newId), so "newest first" is descending id,
 * and an age cutoff is an id range of the primary key. The events go with their load balancer (cascade):
 * a deleted one has no events route left to read them from.
 */
export const lbEvents = sqliteTable(
  'lb_events',
  {
    id: text('id').primaryKey(),
    loadBalancerId: text('load_balancer_id')
      .notNull()
      .references(() => loadBalancers.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: EVENT_KINDS }).notNull(),
    /** When it was recorded (RFC 3339); the id carries the same time. */
    at: text('at').notNull(),
    summary: text('summary').notNull(),
    actor: text('actor', { mode: 'json' }).$type<LoadBalancerEvent['actor']>(),
    operation: text('operation'),
    resourceId: text('resource_id'),
    detail: text('detail', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
  },
  (t) => [
    index('lb_events_lb_idx').on(t.loadBalancerId, t.id),
    index('lb_events_lb_kind_idx').on(t.loadBalancerId, t.kind, t.id),
  ],
);
