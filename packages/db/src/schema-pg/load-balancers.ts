import { bigint, boolean, index, integer, json, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { addressPools } from './address-pools.js';
import { revision, timestamps } from './columns.js';
import { tenants } from './tenants.js';

export const loadBalancers = pgTable(
  'load_balancers',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id')
      .notNull()
      .references(() => tenants.id),
    name: text('name').notNull(),
    addressType: text('address_type', { enum: ['internet', 'intranet'] }).notNull(),
    placementMode: text('placement_mode', { enum: ['all', 'spread'] }).notNull(),
    placementNodeCount: integer('placement_node_count'),
    deletionProtection: boolean('deletion_protection').notNull(),
    tags: json('tags').$type<Record<string, string>>().notNull(),
    /** Bumped by any change under the LB: unbounded, so bigint like revision. */
    configVersion: bigint('config_version', { mode: 'number' }).notNull().default(1),
    address: text('address'),
    addressPoolId: text('address_pool_id').references(() => addressPools.id),
    /**
     * The VIP's place in its pool's range (0 for the pool's first usable address): what the allocator
     * orders and counts, where the text address would have to be read and parsed row by row.
     */
    addressOffset: bigint('address_offset', { mode: 'number' }),
    ...revision,
    ...timestamps,
  },
  (t) => [
    index('load_balancers_tenant_idx').on(t.tenantId, t.id),
    uniqueIndex('load_balancers_address_uq').on(t.address),
    index('load_balancers_pool_idx').on(t.addressPoolId, t.addressOffset),
  ],
);
