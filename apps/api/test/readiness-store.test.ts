import { openPgStore } from '@slb/db/pg';
import { engines, type TestStore } from '@slb/test-support/stores';
import { afterEach, describe, expect, it } from 'vitest';
import { databaseReachable } from '../src/routes/probes.js';

// /readyz's database check on both engines (issue 23): a replica whose database is gone says so.

const all = await engines('apps/api/test/readiness-store.test.ts');
let open: TestStore | undefined;
afterEach(async () => {
  await open?.drop();
  open = undefined;
});

describe.each(all)('readiness on $name', (engine) => {
  it.skipIf(!engine.available)('answers while the database does', async () => {
    open = await engine.open();
    expect(await databaseReachable(open.store)).toBe(true);
  });
});

describe('readiness on postgres', () => {
  it('says unreachable, within its timeout, when nothing listens at the database address', async () => {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    const store = await openPgStore('postgres://postgres@127.0.0.1:1/none', { migrate: false, connectTimeoutMs: 500 });
    try {
      const started = Date.now();
      expect(await databaseReachable(store, 1000)).toBe(false);
      expect(Date.now() - started).toBeLessThan(1500);
    } finally {
      await store.close();
    }
  });
});
