import { index, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { loadBalancers } from './load-balancers.js';
import { nodes } from './nodes.js';

export const lbPlacements = pgTable(
  'lb_placements',
  {
    loadBalancerId: text('load_balancer_id')
      .notNull()
      .references(() => loadBalancers.id, { onDelete: 'cascade' }),
    nodeId: text('node_id')
      .notNull()
      .references(() => nodes.id, { onDelete: 'cascade' }),
  },
  (t) => [primaryKey({ columns: [t.loadBalancerId, t.nodeId] }), index('lb_placements_node_idx').on(t.nodeId)],
);
