import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { addressPools } from './address-pools.js';
import { revision, timestamps } from './columns.js';
import { tenants } from './tenants.js';

export const loadBalancers = sqliteTable(
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
    deletionProtection: integer('deletion_protection', { mode: 'boolean' }).notNull(),
    tags: text('tags', { mode: 'json' }).$type<Record<string, string>>().notNull(),
    /** Bumped by any change to the LB or anything under it; nodes ack the version they applied. */
    configVersion: integer('config_version').notNull().default(1),
    /**
     * Its VIP (canonical spelling). Nullable only for rows from before VIPs, which the API fills at start;
     * unique, so two creates can never be given the same address.
     */
    address: text('address'),
    addressPoolId: text('address_pool_id').references(() => addressPools.id),
    /**
     * The VIP's place in its pool's range (0 for the pool's first usable address): what the allocator
     * orders and counts, where the text address would have to be read and parsed row by row.
     */
    addressOffset: integer('address_offset'),
    ...revision,
    ...timestamps,
  },
  (t) => [
    index('load_balancers_tenant_idx').on(t.tenantId, t.id),
    uniqueIndex('load_balancers_address_uq').on(t.address),
    index('load_balancers_pool_idx').on(t.addressPoolId, t.addressOffset),
  ],
);
