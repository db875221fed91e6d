import { openSqliteTestStore, type TestStore } from '@slb/test-support/stores';
import { sql } from 'drizzle-orm';
import { afterEach, expect, it } from 'vitest';
import { purgeStatement } from './idempotency.js';

// The keys past their retention go once a minute: a pass over every stored response each time, without the
// index on created_at, on the one thread the API serves from. (What the store does with keys, on both
// engines: apps/api/test/idempotency-store.test.ts.)

let open: TestStore | undefined;
afterEach(async () => {
  await open?.drop();
  open = undefined;
});

it('purges by a range of the created_at index, not a pass over every stored response', async () => {
  open = await openSqliteTestStore();
  const { store } = open;
  const query = await store.read(async (q) => purgeStatement(q, store.t, '2026-12-01T00:00:00.000Z').getSQL());
  const plan = await store.read((q) => store.rows<{ detail: string }>(q, sql`EXPLAIN QUERY PLAN ${query}`));
  expect(plan.map((p) => p.detail)).toEqual([
    'SEARCH idempotency_keys USING INDEX idempotency_keys_created_idx (created_at<?)',
  ]);
});
