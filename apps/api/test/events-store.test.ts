import type { Store } from '@slb/db';
import { engines, type TestStore } from '@slb/test-support/stores';
import { eq } from 'drizzle-orm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EventStore, type EventStoreOptions } from '../src/events/store.js';

// The load balancers' events on both engines (issue 23): batched and immediate inserts, an LB deleted since
// its event was recorded, paging, and retention (the newest N per LB, nothing past the age, in bounded
// batches), each engine on a database of its own.

const all = await engines('apps/api/test/events-store.test.ts');
let open: TestStore | undefined;
let events: EventStore | undefined;
afterEach(async () => {
  await events?.close();
  events = undefined;
  await open?.drop();
  open = undefined;
});

const LB = 'lb-aaaaaaaaaaaaaaaaaaaa';
const OTHER = 'lb-bbbbbbbbbbbbbbbbbbbb';
const GONE = 'lb-gone0000000000000000';
const stamps = { createdAt: '2026-12-05T00:00:00.000Z', updatedAt: '2026-12-05T00:00:00.000Z' };

/** A tenant with two load balancers (LB, OTHER), straight into the tables. */
async function seed(store: Store): Promise<void> {
  const { t } = store;
  await store.write(async (q) => {
    await q.insert(t.tenants).values({ id: 'ten-aaaaaaaaaaaaaaaaaaaa', name: 'a', ...stamps });
    for (const [id, name] of [
      [LB, 'web'],
      [OTHER, 'other'],
    ] as const) {
      await q.insert(t.loadBalancers).values({
        id,
        tenantId: 'ten-aaaaaaaaaaaaaaaaaaaa',
        name,
        addressType: 'internet',
        placementMode: 'all',
        deletionProtection: false,
        tags: {},
        ...stamps,
      });
    }
  });
}

const count = async (s: EventStore, lbId: string) => (await s.list(lbId, { limit: 500 })).items.length;
const record = async (s: EventStore, lbId: string, n: number) => {
  for (let i = 0; i < n; i++) s.record({ loadBalancerId: lbId, kind: 'api', summary: `#${i}` });
  await s.flush();
};
/** Every stored event's summary, oldest first, straight from the table. */
const stored = async (store: Store) =>
  (
    await store.read((q) =>
      q.select({ summary: store.t.lbEvents.summary }).from(store.t.lbEvents).orderBy(store.t.lbEvents.id),
    )
  ).map((r) => r.summary);

describe.each(all)('events on $name', (engine) => {
  const start = async (options: EventStoreOptions = {}) => {
    open = await engine.open();
    await seed(open.store);
    events = new EventStore(open.store, options);
    return { store: open.store, s: events };
  };

  it.skipIf(!engine.available)(
    'keeps the newest keepPerLb of each LB, deleting in bounded batches over runs',
    async () => {
      const { s } = await start({ keepPerLb: 5, pruneBatch: 2, pruneBatchesPerRun: 3 });
      await record(s, LB, 12);
      await record(s, OTHER, 3);
      const newest = (await s.list(LB, { limit: 5 })).items.map((e) => e.summary);
      expect(newest).toEqual(['#11', '#10', '#9', '#8', '#7']);
      // A run's budget: 3 statements (the age DELETE, the cap lookup, one 2-row DELETE) at most.
      const first = await s.prune();
      expect(first).toBeLessThanOrEqual(4);
      expect(first).toBeGreaterThan(0);
      let runs = 1;
      while ((await count(s, LB)) > 5 && runs < 20) {
        await s.prune();
        runs++;
      }
      expect(runs).toBeGreaterThan(1);
      expect((await s.list(LB, { limit: 500 })).items.map((e) => e.summary)).toEqual(newest);
      expect(await count(s, OTHER)).toBe(3);
      expect(await s.prune()).toBe(0);
      expect(s.stats.pruned).toBe(7);
    },
  );

  it.skipIf(!engine.available)('deletes events older than the retention, by id range', async () => {
    const { s } = await start({ retentionSeconds: 1 });
    await record(s, LB, 2);
    // Event times and ids come from Date.now(): move the clock 30 ms on rather than wait.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 30);
      await record(s, OTHER, 1);
    } finally {
      vi.useRealTimers();
    }
    const kept = (await s.list(OTHER, { limit: 1 })).items[0]!;
    // "Now" is the retention after the newest event less 10 ms: only the older two are past it.
    expect(await s.prune(Date.parse(kept.at) + 1000 - 10)).toBe(2);
    expect(await count(s, LB)).toBe(0);
    expect(await count(s, OTHER)).toBe(1);
    expect(await s.prune(Date.parse(kept.at) + 1000 + 10)).toBe(1);
  });

  it.skipIf(!engine.available)('prunes on its own timer once started, and stops on close', async () => {
    const { s } = await start({ keepPerLb: 2 });
    await record(s, LB, 6);
    s.startPruning(20);
    const deadline = Date.now() + 3000;
    while ((await count(s, LB)) > 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(await count(s, LB)).toBe(2);
    await s.close();
    s.record({ loadBalancerId: LB, kind: 'api', summary: 'after close' });
    await s.flush();
    expect(await count(s, LB)).toBe(2);
  });

  it.skipIf(!engine.available)(
    'drops an event of an LB that no longer exists without failing the batch, and caps the queue',
    async () => {
      const { store, s } = await start({ maxPending: 3 });
      s.record({ loadBalancerId: GONE, kind: 'node', summary: 'left' });
      for (let i = 0; i < 5; i++) s.record({ loadBalancerId: LB, kind: 'api', summary: `#${i}` });
      await s.flush();
      expect(await count(s, LB)).toBe(2);
      expect(s.stats.dropped).toBe(3);
      expect(await stored(store)).toEqual(['#0', '#1']);
    },
  );

  it.skipIf(!engine.available)(
    'writes a batch larger than one INSERT, skipping the events of LBs that do not exist',
    async () => {
      const { store, s } = await start();
      // OTHER is deleted; GONE never was: neither's events are stored, and the rest are.
      await store.write((q) => q.delete(store.t.loadBalancers).where(eq(store.t.loadBalancers.id, OTHER)));
      for (let i = 0; i < 130; i++) {
        s.record({ loadBalancerId: [LB, GONE, OTHER][i % 3]!, kind: 'node', summary: `#${i}` });
      }
      await s.flush();
      expect(s.stats.dropped).toBe(0);
      expect(await count(s, LB)).toBe(44);
      expect(await stored(store)).toEqual(
        Array.from({ length: 130 }, (_, i) => i)
          .filter((i) => i % 3 === 0)
          .map((i) => `#${i}`),
      );
    },
  );

  it.skipIf(!engine.available)(
    'records at once inside a write, committed or rolled back with it; a missing LB stores nothing',
    async () => {
      const { store, s } = await start();
      await expect(
        store.write(async () => {
          await s.recordNow({ loadBalancerId: LB, kind: 'api', summary: 'rolled back' });
          throw new Error('the write fails');
        }),
      ).rejects.toThrow('the write fails');
      expect(await stored(store)).toEqual([]);
      await store.write(async () => {
        await s.recordNow({ loadBalancerId: LB, kind: 'api', summary: 'committed' });
      });
      await s.recordNow({ loadBalancerId: GONE, kind: 'api', summary: 'gone' });
      await s.recordNow({ loadBalancerId: LB, kind: 'api', summary: 'alone' });
      expect(await stored(store)).toEqual(['committed', 'alone']);
    },
  );

  it.skipIf(!engine.available)(
    'writes a queued event on its own, not in a write that was open when it was recorded',
    async () => {
      const { store, s } = await start();
      await expect(
        store.write(async (q) => {
          s.record({ loadBalancerId: LB, kind: 'node', summary: 'queued' });
          // Turns of the event loop pass while this write is open: the batch is due in one of them.
          await q.select().from(store.t.tenants);
          await new Promise((r) => setTimeout(r, 20));
          throw new Error('the write fails');
        }),
      ).rejects.toThrow('the write fails');
      await s.flush();
      expect(await stored(store)).toEqual(['queued']);
    },
  );

  it.skipIf(!engine.available)('pages newest first, by kind, with the JSON fields as recorded', async () => {
    const { s } = await start();
    const actor = { tokenId: 'tok-x', tenantId: 'ten-aaaaaaaaaaaaaaaaaaaa', role: 'member' as const };
    for (let i = 0; i < 5; i++) {
      s.record({ loadBalancerId: LB, kind: i % 2 ? 'health' : 'api', summary: `#${i}`, actor, detail: { i } });
    }
    await s.recordNow({ loadBalancerId: LB, kind: 'api', summary: '#5', operation: 'updateLoadBalancer' });
    const first = await s.list(LB, { limit: 2 });
    expect(first.items.map((e) => e.summary)).toEqual(['#5', '#4']);
    expect(first.items[1]).toMatchObject({ actor, detail: { i: 4 }, operation: null, resourceId: null });
    expect(first.items[0]).toMatchObject({ actor: null, detail: {}, operation: 'updateLoadBalancer' });
    const rest = await s.list(LB, { limit: 10, cursor: first.nextCursor ?? undefined });
    expect(rest.items.map((e) => e.summary)).toEqual(['#3', '#2', '#1', '#0']);
    expect(rest.nextCursor).toBeNull();
    const health = await s.list(LB, { limit: 10, kind: 'health' });
    expect(health.items.map((e) => e.summary)).toEqual(['#3', '#1']);
    expect(await s.list(OTHER, {})).toEqual({ items: [], nextCursor: null });
  });
});
