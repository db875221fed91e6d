import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import type { Db } from './open.js';

/** The repository's top-level migrations/ folder, found from this file in src/ or dist/. */
export const DEFAULT_MIGRATIONS_FOLDER = fileURLToPath(new URL('../../../migrations', import.meta.url));

export interface Journal {
  entries: { idx: number; when: number; tag: string }[];
}

export class SchemaTooNewError extends Error {
  constructor(dbLatest: number, codeLatest: number | undefined) {
    super(
      `database schema is newer than this build: it has a migration from ${new Date(dbLatest).toISOString()} ` +
        `that this code does not know (latest known: ${codeLatest ? new Date(codeLatest).toISOString() : 'none'}); ` +
        'run a newer build or restore a backup taken before the upgrade',
    );
    this.name = 'SchemaTooNewError';
  }
}

/** When each applied migration was made (`when` in the journal), as recorded by drizzle in the database. */
export function appliedMigrationTimes(sqlite: Database.Database): number[] {
  const table = sqlite
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'")
    .get();
  if (!table) return [];
  return (sqlite.prepare('SELECT created_at FROM __drizzle_migrations').all() as { created_at: number }[]).map((r) =>
    Number(r.created_at),
  );
}

/**
 * Applies the migrations this build has and the database lacks; returns how many it applied.
 * Refuses (SchemaTooNewError) a database migrated by a newer build: running old code on it could corrupt it.
 */
export function runMigrations(db: Db, sqlite: Database.Database, folder = DEFAULT_MIGRATIONS_FOLDER): number {
  const journalPath = `${folder}/meta/_journal.json`;
  if (!existsSync(journalPath)) throw new Error(`migrations not found at ${folder}`);
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as Journal;
  const known = new Set(journal.entries.map((e) => e.when));
  const codeLatest = journal.entries.at(-1)?.when;
  const before = appliedMigrationTimes(sqlite);
  const unknown = before.filter((t) => !known.has(t));
  if (unknown.length > 0) throw new SchemaTooNewError(Math.max(...unknown), codeLatest);
  migrate(db, { migrationsFolder: folder });
  return appliedMigrationTimes(sqlite).length - before.length;
}
