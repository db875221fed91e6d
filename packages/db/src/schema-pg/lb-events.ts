import { EVENT_KINDS, type LoadBalancerEvent } from '@slb/model';
import { index, json, pgTable, text } from 'drizzle-orm/pg-core';
import { loadBalancers } from './load-balancers.js';

export const lbEvents = pgTable(
  'lb_events',
  {
    id: text('id').primaryKey(),
    loadBalancerId: text('load_balancer_id')
      .notNull()
      .references(() => loadBalancers.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: EVENT_KINDS }).notNull(),
    at: text('at').notNull(),
    summary: text('summary').notNull(),
    actor: json('actor').$type<LoadBalancerEvent['actor']>(),
    operation: text('operation'),
    resourceId: text('resource_id'),
    detail: json('detail').$type<Record<string, unknown>>().notNull(),
  },
  (t) => [
    index('lb_events_lb_idx').on(t.loadBalancerId, t.id),
    index('lb_events_lb_kind_idx').on(t.loadBalancerId, t.kind, t.id),
  ],
);
