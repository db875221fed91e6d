import { integer, pgTable, text } from 'drizzle-orm/pg-core';

export const cluster = pgTable('cluster', {
  /** Always 1: a primary key that admits one row (a plain integer, not a serial). */
  singleton: integer('singleton').primaryKey(),
  id: text('id').notNull(),
  createdAt: text('created_at').notNull(),
});
