import { newId } from '@slb/db';
import { engines, type TestStore } from '@slb/test-support/stores';
import { afterEach, describe, expect, it } from 'vitest';
import { IdempotencyStore, purgeStatement } from '../src/services/idempotency.js';

// Idempotent creates on both engines: the create and its stored response commit in one transaction, a
// retry gets the first response, and a key used for another request is refused.

const all = await engines('apps/api/test/idempotency-store.test.ts');
let open: TestStore | undefined;
afterEach(async () => {
  await open?.drop();
  open = undefined;
});

const AT = '2026-12-05T00:00:00.000Z';

describe.each(all)('idempotent creates on $name', (engine) => {
  const start = async () => {
    open = await engine.open();
    const { store } = open;
    await store.write((q) =>
      q.insert(store.t.tenants).values({ id: 'ten-a', name: 'a', createdAt: AT, updatedAt: AT }),
    );
    return { store, keys: new IdempotencyStore(store) };
  };

  it.skipIf(!engine.available)('replays the first response and creates once', async () => {
    const { store, keys } = await start();
    const create = (name: string) => async () => {
      const id = newId('tenant');
      await store.write((q) => q.insert(store.t.tenants).values({ id, name, createdAt: AT, updatedAt: AT }));
      return { status: 201, body: { id, name }, headers: { etag: '"1"' } };
    };
    const first = await keys.run('ten-a', 'k-1', 'POST /tenants {"name":"x"}', create('x'));
    const again = await keys.run('ten-a', 'k-1', 'POST /tenants {"name":"x"}', create('x'));
    expect(first.replayed).toBe(false);
    expect(again).toEqual({ ...first, replayed: true });
    const names = await store.read((q) => q.select({ name: store.t.tenants.name }).from(store.t.tenants));
    expect(names.filter((r) => r.name === 'x')).toHaveLength(1);
    await expect(keys.run('ten-a', 'k-1', 'POST /tenants {"name":"y"}', create('y'))).rejects.toMatchObject({
      code: 'idempotency_key_reused',
    });
  });

  it.skipIf(!engine.available)('stores no key when the create fails, so a retry runs it again', async () => {
    const { store, keys } = await start();
    let calls = 0;
    const flaky = async () => {
      calls += 1;
      await store.write((q) =>
        q.insert(store.t.tenants).values({ id: `ten-${calls}`, name: `n${calls}`, createdAt: AT, updatedAt: AT }),
      );
      if (calls === 1) throw new Error('refused after its insert');
      return { status: 201, body: { calls }, headers: {} };
    };
    await expect(keys.run('ten-a', 'k-2', 'POST /x', flaky)).rejects.toThrow('refused after its insert');
    const retried = await keys.run('ten-a', 'k-2', 'POST /x', flaky);
    expect(retried).toEqual({ status: 201, body: { calls: 2 }, headers: {}, replayed: false });
    const ids = await store.read((q) => q.select({ id: store.t.tenants.id }).from(store.t.tenants));
    expect(ids.map((r) => r.id).sort()).toEqual(['ten-2', 'ten-a']);
  });

  it.skipIf(!engine.available)('purges the keys stored before a time and keeps the others', async () => {
    const { store, keys } = await start();
    const made = { status: 201, body: { made: 'new' }, headers: {} };
    await keys.run('ten-a', 'new', 'POST /x', async () => made);
    await store.write((q) =>
      q.insert(store.t.idempotencyKeys).values({
        tenantId: 'ten-a',
        key: 'old',
        requestFingerprint: 'f',
        statusCode: 201,
        responseBody: '{}',
        responseHeaders: {},
        createdAt: '2026-01-01T00:00:00.000Z',
      }),
    );
    await store.write((q) => purgeStatement(q, store.t, '2026-06-01T00:00:00.000Z'));
    const left = await store.read((q) => q.select({ key: store.t.idempotencyKeys.key }).from(store.t.idempotencyKeys));
    expect(left).toEqual([{ key: 'new' }]);
    const replay = await keys.run('ten-a', 'new', 'POST /x', async () => ({
      status: 201,
      body: 'second',
      headers: {},
    }));
    expect(replay.body).toEqual({ made: 'new' });
  });
});
