import { integer, text } from 'drizzle-orm/sqlite-core';

/** Columns every resource table carries. Timestamps are RFC 3339 strings: sortable and what the API returns. */
export const timestamps = {
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
};

/** Bumped on every write; the ETag of the resource. */
export const revision = { revision: integer('revision').notNull().default(1) };
