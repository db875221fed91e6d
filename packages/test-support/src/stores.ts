import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, runMigrations, type Store, sqliteStore } from '@slb/db';
import { openPgStore } from '@slb/db/pg';
import { createTestPgDatabase, pgReachable } from './pg-database.js';

/** A migrated, empty store of one engine, for a test; `drop` closes it and removes its file or database. */
export interface TestStore {
  store: Store;
  drop(): Promise<void>;
}

export interface Engine {
  name: 'sqlite' | 'postgres';
  /** False when PostgreSQL is unreachable outside CI (the file's PostgreSQL tests then skip). */
  available: boolean;
  open(): Promise<TestStore>;
}

/** A migrated SQLite store in a temporary directory (no PostgreSQL asked: fine for unit tests). */
export async function openSqliteTestStore(): Promise<TestStore> {
  const dir = mkdtempSync(join(tmpdir(), 'slb-store-'));
  const open = openDatabase(join(dir, 'slb.db'));
  runMigrations(open.db, open.sqlite);
  const store = sqliteStore(open);
  return {
    store,
    drop: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function openPostgres(): Promise<TestStore> {
  const database = await createTestPgDatabase();
  const store = await openPgStore(database.url, { max: 4 });
  return {
    store,
    drop: async () => {
      await store.close();
      await database.drop();
    },
  };
}

/**
 * Both engines a store runs on, for `describe.each`: each test opens its own (a SQLite file, or a
 * PostgreSQL database of its own). `file` names the test file in the skip or CI failure message.
 */
export async function engines(file: string): Promise<Engine[]> {
  return [
    { name: 'sqlite', available: true, open: openSqliteTestStore },
    { name: 'postgres', available: await pgReachable(file), open: openPostgres },
  ];
}
