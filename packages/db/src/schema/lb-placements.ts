import { index, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { loadBalancers } from './load-balancers.js';
import { nodes } from './nodes.js';

/**
 * The L4 nodes each load balancer runs on, as the control hub last placed it. Placement prefers what it had
 * (moving an LB moves its clients); kept here so that a controller restarted, or another replica, starts from
 * it too. Without it, the first L4 node to say hello after a restart took every `spread` LB, for good.
 */
export const lbPlacements = sqliteTable(
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
