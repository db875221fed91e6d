import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { ensureClusterId } from './cluster-id.js';
import { runMigrations } from './migrate.js';
import { type OpenDatabase, openDatabase } from './open.js';
import { sqliteStore } from './store.js';

const dirs: string[] = [];
const opened: OpenDatabase[] = [];
afterEach(() => {
  for (const s of opened.splice(0)) s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(path: string): OpenDatabase {
  const store = openDatabase(path);
  opened.push(store);
  runMigrations(store.db, store.sqlite);
  return store;
}

function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), 'slb-cluster-'));
  dirs.push(dir);
  return join(dir, 'slb.db');
}

it('makes the cluster id once per database and keeps it across opens', async () => {
  const path = tempDb();
  // The API holds its SQLite file exclusively: the next process on it (a restart, a standby taking over)
  // opens it after the first closed it, and must read the same id.
  const idOnce = async () => {
    const store = open(path);
    const id = await ensureClusterId(sqliteStore(store));
    store.close();
    opened.pop();
    return id;
  };
  const first = await idOnce();
  expect(first).toMatch(/^slb-[0-9a-f]{12}$/);
  expect(await idOnce()).toBe(first);
  expect(await idOnce()).toBe(first);
});

it('reads the row that won when a concurrent first start inserted before it', async () => {
  const store = sqliteStore(open(tempDb()));
  const first = await ensureClusterId(store);
  // The insert of a second call (a replica racing the first on a shared database) is ignored, not an error.
  for (let i = 0; i < 3; i++) expect(await ensureClusterId(store)).toBe(first);
});

it('gives two databases two ids', async () => {
  const one = await ensureClusterId(sqliteStore(open(tempDb())));
  expect(await ensureClusterId(sqliteStore(open(tempDb())))).not.toBe(one);
});
