import { integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';

// No triggers keep this table on PostgreSQL yet (SQLite's are in migrations/0012): db:copy copies the counts
// as they stand, and the API does not run on PostgreSQL until its data layer does (issue #23).
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
