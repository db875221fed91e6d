import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { openDatabase, runMigrations } from '@slb/db';
import { createTestPgDatabase, pgReachable, type TestPgDatabase } from '@slb/test-support/pg-database';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { populateEveryTable } from './pg-fixture.js';

// `npm run db:copy` as an operator runs it: the built script, its output and its exit status.

const SCRIPT = fileURLToPath(new URL('../dist/scripts/copy-sqlite-to-pg.js', import.meta.url));
const reachable = await pgReachable('packages/db/test/pg-copy-cli.test.ts');
let dir: string;
let sqlitePath: string;
let target: TestPgDatabase | undefined;

async function dbCopy(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [SCRIPT, ...args], {
      env: { ...process.env, SLB_DATABASE_URL: '' },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'slb-pg-cli-'));
  sqlitePath = join(dir, 'slb.db');
  const store = openDatabase(sqlitePath);
  runMigrations(store.db, store.sqlite);
  populateEveryTable(store.db);
  store.close();
  if (reachable) target = await createTestPgDatabase();
});

afterAll(async () => {
  await target?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!reachable)('npm run db:copy', () => {
  it('prints rows per table and the count check, masks the password, prints no secret', async () => {
    const url = new URL(target?.url ?? '');
    url.password = 'pw-never-printed'; // trust auth ignores it
    const run = await dbCopy('--from', sqlitePath, '--to', url.toString());
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`into postgres://postgres:***@${url.host}/`);
    expect(run.stdout).toMatch(/^ {2}tokens +2 rows +\d+ ms$/m);
    expect(run.stdout).toMatch(/^count check: 20 tables, \d+ rows, equal in SQLite and PostgreSQL$/m);
    const output = run.stdout + run.stderr;
    for (const secret of ['pw-never-printed', 'a'.repeat(64), 'secret-key-material']) {
      expect(output).not.toContain(secret);
    }
  });

  it('exits 1 with the reason when the target holds rows, or arguments are missing', async () => {
    const again = await dbCopy('--from', sqlitePath, '--to', target?.url ?? '');
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /^db:copy: the target database is not empty \(.*\): copy into a new, empty database$/m,
    );
    const bare = await dbCopy('--from', sqlitePath);
    expect(bare.code).toBe(1);
    expect(bare.stderr).toContain('--from and --to are required');
  });
});
