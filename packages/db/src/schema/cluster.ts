import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * The deployment's identity: one row, made at the first start. Its id namespaces every Redis name the
 * deployment uses (health queue, health keys, session sync), so two deployments on one Redis never share
 * one; every API process on the same database reads the same row, so replicas share theirs.
 */
export const cluster = sqliteTable('cluster', {
  /** Always 1: a primary key that admits one row, so a concurrent first start inserts it once. */
  singleton: integer('singleton').primaryKey(),
  /** `slb-` and 12 random lowercase hex digits. */
  id: text('id').notNull(),
  createdAt: text('created_at').notNull(),
});
