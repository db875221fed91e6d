import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { type Journal, SchemaTooNewError } from '../migrate.js';
import type * as pgSchema from '../schema-pg/index.js';

export type PgDb = NodePgDatabase<typeof pgSchema>;

/** The repository's top-level migrations-pg/ folder, found from this file in src/pg/ or dist/pg/. */
export const DEFAULT_PG_MIGRATIONS_FOLDER = fileURLToPath(new URL('../../../../migrations-pg', import.meta.url));

/** drizzle's bookkeeping table for PostgreSQL: schema `drizzle`, table `__drizzle_migrations`. */
async function appliedPgMigrationTimes(db: PgDb): Promise<number[]> {
  const exists = await db.execute<{ found: string | null }>(
    sql`SELECT to_regclass('drizzle.__drizzle_migrations')::text AS found`,
  );
  if (!exists.rows[0]?.found) return [];
  const rows = await db.execute<{ created_at: string }>(sql`SELECT created_at FROM drizzle.__drizzle_migrations`);
  return rows.rows.map((r) => Number(r.created_at));
}

/**
 * PostgreSQL's runMigrations: applies what this build has and the database lacks, returns how many it
 * applied, and refuses (SchemaTooNewError) a database migrated by a newer build.
 */
export async function runPgMigrations(db: PgDb, folder = DEFAULT_PG_MIGRATIONS_FOLDER): Promise<number> {
  const journalPath = `${folder}/meta/_journal.json`;
  if (!existsSync(journalPath)) throw new Error(`PostgreSQL migrations not found at ${folder}`);
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as Journal;
  const known = new Set(journal.entries.map((e) => e.when));
  const before = await appliedPgMigrationTimes(db);
  const unknown = before.filter((t) => !known.has(t));
  if (unknown.length > 0) throw new SchemaTooNewError(Math.max(...unknown), journal.entries.at(-1)?.when);
  await migrate(db, { migrationsFolder: folder });
  return (await appliedPgMigrationTimes(db)).length - before.length;
}
