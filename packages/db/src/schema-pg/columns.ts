import { bigint, text } from 'drizzle-orm/pg-core';

/**
 * The SQLite schema's column sets (../schema/columns.ts), for PostgreSQL. Timestamps stay RFC 3339 text, not
 * timestamptz: the services compare them as text with nowIso() and return them as stored, and timestamptz
 * would hand back Date objects rounded to microseconds.
 */
export const timestamps = {
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
};

/**
 * Bumped on every write, so unbounded like SQLite's 64-bit integers: bigint, read back as a JS number (exact
 * up to 2^53, as better-sqlite3 returns them).
 */
export const revision = { revision: bigint('revision', { mode: 'number' }).notNull().default(1) };
