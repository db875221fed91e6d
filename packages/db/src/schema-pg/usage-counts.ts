import { integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';

// Triggers keep this table, as on SQLite (migrations-pg/0004, migrations/0012), so db:copy does not copy its
// rows: the copied resources' own inserts count them, and the copy checks they come to SQLite's counts.
export const usageCounts = pgTable(
  'usage_counts',
  {
    scope: text('scope').notNull(),
    name: text('name').notNull(),
    /** Bounded by each quota's ceiling (@slb/model quota.ts), far below 2^31. */
    used: integer('used').notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.name] })],
);
