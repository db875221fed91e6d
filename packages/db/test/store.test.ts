import { once } from 'node:events';
import { type AddressInfo, connect, createServer } from 'node:net';
import { changedRows, databaseUnavailable, LockOutsideWrite, WriteInsideRead } from '@slb/db';
import { openPgStore } from '@slb/db/pg';
import { createTestPgDatabase } from '@slb/test-support/pg-database';
import { engines, type TestStore } from '@slb/test-support/stores';
import { asc, eq, sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';

// The async store (issue 23) on both engines: the same calls give the same rows and the same transaction
// behaviour on a real SQLite file and on a real PostgreSQL 15 database.

const all = await engines('packages/db/test/store.test.ts');
let open: TestStore | undefined;

afterEach(async () => {
  await open?.drop();
  open = undefined;
});

const AT = '2026-12-05T00:00:00.000Z';
const stamps = { createdAt: AT, updatedAt: AT };

describe.each(all)('store on $name', (engine) => {
  const start = async () => {
    open = await engine.open();
    return open.store;
  };

  it.skipIf(!engine.available)('writes and reads back booleans, JSON in key order and integers past 2^32', async () => {
    const store = await start();
    const { t } = store;
    await store.write(async (q) => {
      await q.insert(t.tenants).values({ id: 'ten-a', name: 'acme', ...stamps });
      await q.insert(t.loadBalancers).values({
        id: 'lb-1',
        tenantId: 'ten-a',
        name: 'web',
        addressType: 'internet',
        placementMode: 'all',
        deletionProtection: true,
        tags: { zeta: 'z', alpha: 'a' },
        configVersion: 5_000_000_000,
        ...stamps,
      });
    });
    const [row] = await store.read((q) => q.select().from(t.loadBalancers).where(eq(t.loadBalancers.id, 'lb-1')));
    expect(row?.deletionProtection).toBe(true);
    expect(Object.keys(row?.tags ?? {})).toEqual(['zeta', 'alpha']);
    expect(row?.configVersion).toBe(5_000_000_000);
    expect(row?.placementNodeCount).toBeNull();
  });

  it.skipIf(!engine.available)('rolls a write back when its work throws, and passes the error on', async () => {
    const store = await start();
    const { t } = store;
    const failed = store.write(async (q) => {
      await q.insert(t.tenants).values({ id: 'ten-a', name: 'acme', ...stamps });
      throw new Error('refused after the insert');
    });
    await expect(failed).rejects.toThrow('refused after the insert');
    expect(await store.read((q) => q.select().from(t.tenants))).toEqual([]);
  });

  it.skipIf(!engine.available)('never lets a read see a write that is still open', async () => {
    const store = await start();
    const { t } = store;
    let inserted!: () => void;
    const insertDone = new Promise<void>((resolve) => {
      inserted = resolve;
    });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const writing = store.write(async (q) => {
      await q.insert(t.tenants).values({ id: 'ten-a', name: 'acme', ...stamps });
      inserted();
      await gate;
      throw new Error('rolled back');
    });
    await insertDone;
    // On SQLite the read waits its turn (one connection); on PostgreSQL it runs beside the open transaction.
    const reading = store.read((q) => q.select().from(t.tenants));
    release();
    await expect(writing).rejects.toThrow('rolled back');
    expect(await reading).toEqual([]);
  });

  it.skipIf(!engine.available)('joins a call made inside a write to its transaction', async () => {
    const store = await start();
    const { t } = store;
    const tenant = (id: string) => ({ id, name: id, ...stamps });
    const outcome = store.write(async (q) => {
      await q.insert(t.tenants).values(tenant('ten-outer'));
      // A nested read sees the outer write's rows; a nested write is part of the same transaction.
      const seen = await store.read((inner) => inner.select().from(t.tenants));
      await store.write((inner) => inner.insert(t.tenants).values(tenant('ten-inner')));
      // A nested write that fails undoes its own rows only, and the outer one carries on.
      await store
        .write(async (inner) => {
          await inner.insert(t.tenants).values(tenant('ten-undone'));
          throw new Error('inner refused');
        })
        .catch(() => undefined);
      const after = await store.read((inner) => inner.select({ id: t.tenants.id }).from(t.tenants));
      return { seen: seen.map((r) => r.id), after: after.map((r) => r.id).sort() };
    });
    expect(await outcome).toEqual({ seen: ['ten-outer'], after: ['ten-inner', 'ten-outer'] });
    // The whole outer write rolls back with everything joined to it.
    await expect(
      store.write(async (q) => {
        await q.insert(t.tenants).values(tenant('ten-later'));
        await store.write((inner) => inner.insert(t.tenants).values(tenant('ten-later-inner')));
        throw new Error('outer refused');
      }),
    ).rejects.toThrow('outer refused');
    const ids = (await store.read((q) => q.select({ id: t.tenants.id }).from(t.tenants))).map((r) => r.id).sort();
    expect(ids).toEqual(['ten-inner', 'ten-outer']);
  });

  it.skipIf(!engine.available)(
    'refuses a write inside a read and a lock outside a write; a promise settled after a call is outside it',
    async () => {
      const store = await start();
      const { t } = store;
      await expect(store.read(async () => store.write(async () => 1))).rejects.toBeInstanceOf(WriteInsideRead);
      // A lock lasts as long as the write that takes it: outside one it would be gone at once.
      await expect(store.lock('key')).rejects.toBeInstanceOf(LockOutsideWrite);
      await expect(store.read(() => store.lock('key'))).rejects.toBeInstanceOf(LockOutsideWrite);
      const locked = store.write(async () => {
        await store.lock('key');
        return 'locked';
      });
      expect(await locked).toBe('locked');
      let later!: Promise<unknown>;
      await store.write(async () => {
        later = new Promise((resolve) => setTimeout(resolve, 5)).then(() =>
          store.write((q) => q.insert(t.tenants).values({ id: 'ten-late', name: 'late', ...stamps })),
        );
      });
      await later;
      expect(await store.read((q) => q.select({ id: t.tenants.id }).from(t.tenants))).toEqual([{ id: 'ten-late' }]);
    },
  );

  it.skipIf(!engine.available)('runs a prepared read many times, inside a write on its transaction', async () => {
    const store = await start();
    const { t } = store;
    const byName = store.prepare('tenant_by_name', (q) =>
      q
        .select({ id: t.tenants.id })
        .from(t.tenants)
        .where(eq(t.tenants.name, sql.placeholder('name'))),
    );
    await store.write((q) => q.insert(t.tenants).values({ id: 'ten-a', name: 'a', ...stamps }));
    expect(await byName({ name: 'a' })).toEqual([{ id: 'ten-a' }]);
    expect(await byName({ name: 'b' })).toEqual([]);
    const seen = await store
      .write(async (q) => {
        await q.insert(t.tenants).values({ id: 'ten-b', name: 'b', ...stamps });
        const inside = await byName({ name: 'b' });
        throw Object.assign(new Error('roll back'), { inside });
      })
      .catch((err: { inside: unknown }) => err.inside);
    expect(seen).toEqual([{ id: 'ten-b' }]);
    expect(await byName({ name: 'b' })).toEqual([]);
  });

  it.skipIf(!engine.available)('counts changed rows and runs raw SQL the same way', async () => {
    const store = await start();
    const { t } = store;
    await store.write(async (q) => {
      await q.insert(t.tenants).values([
        { id: 'ten-b', name: 'b', ...stamps },
        { id: 'ten-a', name: 'a', ...stamps },
      ]);
    });
    const result = await store.write((q) => q.update(t.tenants).set({ updatedAt: '2027-01-01T00:00:00.000Z' }));
    expect(changedRows(result)).toBe(2);
    const counted = await store.read((q) =>
      store.rows<{ n: number }>(q, sql`SELECT CAST(count(*) AS integer) AS n FROM tenants`),
    );
    expect(counted).toEqual([{ n: 2 }]);
    const ordered = await store.read((q) => q.select({ id: t.tenants.id }).from(t.tenants).orderBy(asc(t.tenants.id)));
    expect(ordered.map((r) => r.id)).toEqual(['ten-a', 'ten-b']);
  });
});

describe('store on sqlite', () => {
  it('runs concurrent writes one after another, so a read-modify-write across awaits loses nothing', async () => {
    const sqlite = all.find((e) => e.name === 'sqlite');
    if (!sqlite) throw new Error('no sqlite engine');
    open = await sqlite.open();
    const { store } = open;
    const { t } = store;
    await store.write((q) => q.insert(t.tenants).values({ id: 'ten-a', name: '0', ...stamps }));
    const bump = () =>
      store.write(async (q) => {
        const [row] = await q.select().from(t.tenants).where(eq(t.tenants.id, 'ten-a'));
        await q
          .update(t.tenants)
          .set({ name: String(Number(row?.name) + 1) })
          .where(eq(t.tenants.id, 'ten-a'));
      });
    await Promise.all(Array.from({ length: 20 }, bump));
    const [row] = await store.read((q) => q.select().from(t.tenants));
    expect(row?.name).toBe('20');
  });
});

describe('store on postgres', () => {
  const postgres = all.find((e) => e.name === 'postgres');

  it.skipIf(!postgres?.available)(
    'survives the server ending the connection a write holds between two queries, and writes on a new one',
    async () => {
      open = await (postgres as NonNullable<typeof postgres>).open();
      const { store } = open;
      const { t } = store;
      let held!: (pid: number) => void;
      const pidHeld = new Promise<number>((resolve) => {
        held = resolve;
      });
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const failed = store.write(async (q) => {
        const [row] = await store.rows<{ pid: number }>(q, sql`SELECT pg_backend_pid() AS pid`);
        held(Number(row?.pid));
        await gate;
        await q.insert(t.tenants).values({ id: 'ten-lost', name: 'lost', ...stamps });
      });
      const pid = await pidHeld;
      // What a restart of PostgreSQL does to every session: the server ends it (pg_terminate_backend sends
      // the client a FATAL and closes the socket), here while the write's client is checked out of the pool.
      await store.read((q) => store.rows(q, sql`SELECT pg_terminate_backend(${pid})`));
      for (let i = 0; i < 100; i++) {
        const left = await store.read((q) =>
          store.rows<{ n: number }>(q, sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${pid}`),
        );
        if (left[0]?.n === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // The client reads the FATAL and the close: its 'error' event, thrown before, stopped the process.
      await new Promise((resolve) => setTimeout(resolve, 100));
      release();
      const error = await failed.then(
        () => null,
        (e: unknown) => e,
      );
      // Told apart from a failed query: the API answers it 503, to be retried.
      expect(databaseUnavailable(error)).toBe(true);
      await store.write((q) => q.insert(t.tenants).values({ id: 'ten-a', name: 'acme', ...stamps }));
      expect(await store.read((q) => q.select({ id: t.tenants.id }).from(t.tenants))).toEqual([{ id: 'ten-a' }]);
      const duplicate = await store
        .write((q) => q.insert(t.tenants).values({ id: 'ten-a', name: 'again', ...stamps }))
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(duplicate).toBeInstanceOf(Error);
      expect(databaseUnavailable(duplicate)).toBe(false);
    },
  );

  it.skipIf(!postgres?.available)(
    'gives back a connection whose transaction could not begin, so the pool neither shrinks nor hangs on close',
    async () => {
      const database = await createTestPgDatabase();
      const target = new URL(database.url);
      // The store reaches PostgreSQL through a relay that can cut a connection the moment it sends BEGIN:
      // what a write meets when it takes a pooled connection whose server has just gone.
      let cutNextBegin = false;
      const relay = createServer((client) => {
        const server = connect(Number(target.port || 5432), target.hostname);
        client.on('data', (chunk: Buffer) => {
          if (cutNextBegin && chunk.toString('latin1').toLowerCase().includes('begin')) {
            cutNextBegin = false;
            client.destroy();
            server.destroy();
            return;
          }
          server.write(chunk);
        });
        server.on('data', (chunk: Buffer) => client.write(chunk));
        for (const [a, b] of [
          [client, server],
          [server, client],
        ] as const) {
          a.on('error', () => b.destroy());
          a.on('close', () => b.destroy());
        }
      });
      relay.listen(0, '127.0.0.1');
      await once(relay, 'listening');
      const via = new URL(database.url);
      via.hostname = '127.0.0.1';
      via.port = String((relay.address() as AddressInfo).port);
      const store = await openPgStore(via.toString(), { max: 2 });
      try {
        const { t } = store;
        for (let i = 0; i < 3; i++) {
          cutNextBegin = true;
          const failed = await store
            .write((q) => q.insert(t.tenants).values({ id: `ten-lost-${i}`, name: 'lost', ...stamps }))
            .then(
              () => null,
              (e: unknown) => e,
            );
          expect(databaseUnavailable(failed)).toBe(true);
        }
        // Three connections lost at BEGIN in a pool of two: the next write still gets one.
        await store.write((q) => q.insert(t.tenants).values({ id: 'ten-a', name: 'acme', ...stamps }));
        expect(await store.read((q) => q.select({ id: t.tenants.id }).from(t.tenants))).toEqual([{ id: 'ten-a' }]);
      } finally {
        const closed = await Promise.race([
          store.close().then(() => 'closed'),
          new Promise((resolve) => setTimeout(() => resolve('waiting for a connection never given back'), 3000)),
        ]);
        relay.close();
        await database.drop();
        expect(closed).toBe('closed');
      }
    },
  );

  it('says a database that refuses connections is unavailable', async () => {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    const store = await openPgStore('postgres://postgres@127.0.0.1:1/none', { migrate: false, connectTimeoutMs: 500 });
    try {
      const error = await store
        .read((q) => store.rows(q, sql`SELECT 1`))
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(databaseUnavailable(error)).toBe(true);
    } finally {
      await store.close();
    }
  });
});
