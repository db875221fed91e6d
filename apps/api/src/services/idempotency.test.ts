import { idempotencyKeys } from '@slb/db';
import { createTestDb, type TestDb } from '@slb/test-support/test-db';
import { sql } from 'drizzle-orm';
import { afterEach, expect, it } from 'vitest';
import { IdempotencyStore, purgeStatement } from './idempotency.js';

// The keys past their retention go once a minute: a pass over every stored response each time, without the
// index on created_at, on the one thread the API serves from.

let t: TestDb;
afterEach(() => t?.close());

const created = (body: string) => ({ status: 201, body: { body }, headers: {} });

it('purges by a range of the created_at index, not a pass over every stored response', () => {
  t = createTestDb();
  const plan = t.db.all<{ detail: string }>(
    sql`EXPLAIN QUERY PLAN ${purgeStatement(t.db, '2026-12-01T00:00:00.000Z').getSQL()}`,
  );
  expect(plan.map((p) => p.detail)).toEqual([
    'SEARCH idempotency_keys USING INDEX idempotency_keys_created_idx (created_at<?)',
  ]);
});

it('purges the keys stored before the time, and keeps the others', () => {
  t = createTestDb();
  const store = new IdempotencyStore(t.db);
  store.run(t.tenantId, 'new', 'POST /x', () => created('new'));
  t.db
    .insert(idempotencyKeys)
    .values({
      tenantId: t.tenantId,
      key: 'old',
      requestFingerprint: 'f',
      statusCode: 201,
      responseBody: '{}',
      responseHeaders: {},
      createdAt: '2026-01-01T00:00:00.000Z',
    })
    .run();
  purgeStatement(t.db, '2026-06-01T00:00:00.000Z').run();
  expect(t.db.select({ key: idempotencyKeys.key }).from(idempotencyKeys).all()).toEqual([{ key: 'new' }]);
  // The kept key still replays its first response.
  expect(store.run(t.tenantId, 'new', 'POST /x', () => created('second')).body).toEqual({ body: 'new' });
});
