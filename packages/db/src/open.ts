import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { type BetterSQLite3Database, drizzle } from 'drizzle-orm/better-sqlite3';
import * as schema from './schema/index.js';

export type Db = BetterSQLite3Database<typeof schema>;

export interface OpenDatabase {
  db: Db;
  sqlite: Database.Database;
  close(): void;
}

/** Opens (creating if needed) the control plane's SQLite file in WAL mode with foreign keys enforced. */
export function openDatabase(path: string): OpenDatabase {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const sqlite = new Database(path);
  // The control plane is the database's only user: holding the lock for the connection's lifetime lets
  // WAL reads skip the shared-memory index (a read costs 1.7 µs instead of 4-5 µs). Other processes
  // cannot open the file while the API runs; back it up through the API's own connection.
  if (path !== ':memory:') sqlite.pragma('locking_mode = EXCLUSIVE');
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('synchronous = NORMAL'); // durable across process crashes in WAL mode; fsync at checkpoints
  sqlite.pragma('busy_timeout = 5000');
  const db = drizzle(sqlite, { schema });
  return { db, sqlite, close: () => sqlite.close() };
}
