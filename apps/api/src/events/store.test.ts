import { createTestDb, type TestDb } from '@slb/test-support/test-db';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EventStore, type EventStoreOptions } from './store.js';

// Retention of the load balancers' events: the newest N per LB, nothing past the age, in bounded batches.

let t: TestDb;
let other: string;
beforeEach(() => {
  t = createTestDb();
  other = t.lbId.replace(/.$/, (c) => (c === '0' ? '1' : '0'));
  const sqlite = (t.db as unknown as { $client: import('better-sqlite3').Database }).$client;
  sqlite
    .prepare(
      `INSERT INTO load_balancers (id, tenant_id, name, address_type, placement_mode, deletion_protection, tags,
       created_at, updated_at) SELECT ?, tenant_id, 'other', address_type, placement_mode, 0, '{}', created_at,
       updated_at FROM load_balancers WHERE id = ?`,
    )
    .run(other, t.lbId);
});
afterEach(() => t.close());

function storeWith(options: EventStoreOptions = {}): EventStore {
  const sqlite = (t.db as unknown as { $client: import('better-sqlite3').Database }).$client;
  return new EventStore(t.db, sqlite, options);
}

const count = (s: EventStore, lbId: string) => s.list(lbId, { limit: 500 }).items.length;
const record = (s: EventStore, lbId: string, n: number) => {
  for (let i = 0; i < n; i++) s.record({ loadBalancerId: lbId, kind: 'api', summary: `#${i}` });
  s.flush();
};

describe('EventStore retention', () => {
  it('keeps the newest keepPerLb of each LB, deleting in bounded batches over runs', () => {
    const s = storeWith({ keepPerLb: 5, pruneBatch: 2, pruneBatchesPerRun: 3 });
    record(s, t.lbId, 12);
    record(s, other, 3);
    const newest = s.list(t.lbId, { limit: 5 }).items.map((e) => e.summary);
    expect(newest).toEqual(['#11', '#10', '#9', '#8', '#7']);
    // A run's budget: 3 statements (the age DELETE, the cap lookup, one 2-row DELETE) at most.
    const first = s.prune();
    expect(first).toBeLessThanOrEqual(4);
    expect(first).toBeGreaterThan(0);
    let runs = 1;
    while (count(s, t.lbId) > 5 && runs < 20) {
      s.prune();
      runs++;
    }
    expect(runs).toBeGreaterThan(1);
    expect(s.list(t.lbId, { limit: 500 }).items.map((e) => e.summary)).toEqual(newest);
    expect(count(s, other)).toBe(3);
    expect(s.prune()).toBe(0);
    expect(s.stats.pruned).toBe(7);
  });

  it('deletes events older than the retention, by id range', async () => {
    const s = storeWith({ retentionSeconds: 1 });
    record(s, t.lbId, 2);
    // Event times and ids come from Date.now(): move the clock 30 ms on rather than wait.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 30);
      record(s, other, 1);
    } finally {
      vi.useRealTimers();
    }
    const kept = s.list(other, { limit: 1 }).items[0]!;
    // "Now" is the retention after the newest event less 10 ms: only the older two are past it.
    expect(s.prune(Date.parse(kept.at) + 1000 - 10)).toBe(2);
    expect(count(s, t.lbId)).toBe(0);
    expect(count(s, other)).toBe(1);
    expect(s.prune(Date.parse(kept.at) + 1000 + 10)).toBe(1);
  });

  it('prunes on its own timer once started, and stops on close', async () => {
    const s = storeWith({ keepPerLb: 2 });
    record(s, t.lbId, 6);
    s.startPruning(20);
    const deadline = Date.now() + 3000;
    while (count(s, t.lbId) > 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(count(s, t.lbId)).toBe(2);
    s.close();
    s.record({ loadBalancerId: t.lbId, kind: 'api', summary: 'after close' });
    s.flush();
    expect(count(s, t.lbId)).toBe(2);
  });

  it('drops an event of an LB that no longer exists without failing the batch, and caps the queue', () => {
    const s = storeWith({ maxPending: 3 });
    s.record({ loadBalancerId: 'lb-gone0000000000000000', kind: 'node', summary: 'left' });
    for (let i = 0; i < 5; i++) s.record({ loadBalancerId: t.lbId, kind: 'api', summary: `#${i}` });
    s.flush();
    expect(count(s, t.lbId)).toBe(2);
    expect(s.stats.dropped).toBe(3);
  });
});
