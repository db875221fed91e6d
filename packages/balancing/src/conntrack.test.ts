import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConnTrackTable, flowKeyString } from './conntrack.js';
import { hashFourTuple } from './hash.js';
import { buildMaglevTable, maglevLookup } from './maglev.js';
import { PersistenceTable } from './persistence.js';

const timeouts = { tcpEstablished: 60_000, tcpClosing: 5_000, udp: 10_000 };

describe('ConnTrackTable', () => {
  it('finds an entry in O(1) and refreshes it on every hit', () => {
    const t = new ConnTrackTable<string>({ timeouts });
    t.insert('a', 'srv-1', 'udp', 0);
    expect(t.lookup('a', 9_000)).toBe('srv-1');
    expect(t.lookup('a', 18_000)).toBe('srv-1'); // 9 s idle < 10 s
    expect(t.lookup('a', 28_000)).toBeUndefined(); // 10 s idle
    expect(t.size).toBe(0);
  });

  it('applies idle timeouts by state: established long, closing short', () => {
    const removed: unknown[] = [];
    const t = new ConnTrackTable<string>({ timeouts, onRemove: (k, _v, why) => removed.push([k, why]) });
    t.insert('est', 'srv-1', 'tcp-established', 0);
    t.insert('fin', 'srv-2', 'tcp-established', 0);
    t.setState('fin', 'tcp-closing', 1_000);
    expect(t.sweep(6_000)).toBe(1);
    expect(removed).toEqual([['fin', 'expired']]);
    expect(t.peek('est')?.state).toBe('tcp-established');
    expect(t.lookup('est', 59_000)).toBe('srv-1');
    expect(t.sweep(120_000)).toBe(1);
    expect(t.size).toBe(0);
  });

  it('expires an unreplied UDP flow after its short timeout, a replied one after the UDP timeout', () => {
    const t = new ConnTrackTable<string>({ timeouts: { ...timeouts, udpUnreplied: 2_000 } });
    t.insert('spoofed', 'srv-1', 'udp-unreplied', 0);
    t.insert('answered', 'srv-2', 'udp-unreplied', 0);
    expect(t.lookup('answered', 1_000)).toBe('srv-2');
    t.setState('answered', 'udp', 1_000);
    // A datagram from the client refreshes an unreplied flow without making it established.
    expect(t.lookup('spoofed', 1_500)).toBe('srv-1');
    expect(t.peek('spoofed')?.state).toBe('udp-unreplied');
    expect(t.sweep(3_500)).toBe(1);
    expect(t.peek('spoofed')).toBeUndefined();
    expect(t.lookup('answered', 10_000)).toBe('srv-2');
  });

  it('never grows past maxEntries and evicts the least recently used entry (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 200 })), { maxLength: 400 }),
        (max, ops) => {
          const t = new ConnTrackTable<number>({ maxEntries: max, touchGranularityMs: 0, timeouts });
          let now = 0;
          for (const [isInsert, key] of ops) {
            now += 1;
            if (isInsert) t.insert(key, key, 'udp', now);
            else t.lookup(key, now);
            expect(t.size).toBeLessThanOrEqual(max);
          }
        },
      ),
    );
    const t = new ConnTrackTable<number>({ maxEntries: 3, touchGranularityMs: 0, timeouts });
    t.insert(1, 1, 'udp', 1);
    t.insert(2, 2, 'udp', 2);
    t.insert(3, 3, 'udp', 3);
    t.lookup(1, 4); // 2 is now the least recently used
    expect(t.insert(4, 4, 'udp', 5)).toBe('evicted');
    expect(t.peek(2)).toBeUndefined();
    expect(t.peek(1)?.value).toBe(1);
    expect(t.evicted).toBe(1);
  });

  it('caps inserts per second under a flood, then the caller hashes without inserting (compute-only)', () => {
    const t = new ConnTrackTable<string>({ maxInsertsPerSecond: 1_000, maxEntries: 1_000_000, timeouts });
    const backends = Array.from({ length: 10 }, (_, i) => ({ id: `srv-${i}`, weight: 1 }));
    const table = buildMaglevTable(backends, { tableSize: 1009 });
    let tracked = 0;
    let hashed = 0;
    const now = 5_000;
    for (let p = 0; p < 50_000; p++) {
      const flow = {
        srcAddr: '198.51.100.9',
        srcPort: p,
        dstAddr: '127.0.0.11',
        dstPort: 53,
        protocol: 'udp' as const,
      };
      const key = flowKeyString(flow);
      if (t.lookup(key, now) !== undefined) continue;
      const backend = maglevLookup(table, hashFourTuple(flow))!;
      if (t.insert(key, backend, 'udp', now) === 'rate-limited') hashed++;
      else tracked++;
      // Compute-only flows still get a deterministic backend: the next packet hashes the same way.
      expect(maglevLookup(table, hashFourTuple(flow))).toBe(backend);
    }
    expect(tracked).toBe(1_000);
    expect(hashed).toBe(49_000);
    expect(t.size).toBe(1_000);
    expect(t.rateLimited).toBe(49_000);
    // Tokens come back with time.
    expect(t.insert('late', 'srv-1', 'udp', now + 500)).toBe('inserted');
  });

  it('sweeps with a bounded budget', () => {
    const t = new ConnTrackTable<number>({ timeouts });
    for (let i = 0; i < 100; i++) t.insert(i, i, 'udp', 0);
    expect(t.sweep(20_000, 30)).toBe(30);
    expect(t.size).toBe(70);
  });
});

describe('PersistenceTable', () => {
  it('keeps a client on its backend for the timeout after its last connection', () => {
    const p = new PersistenceTable({ timeoutMs: 30_000 });
    p.set('203.0.113.5', 'srv-2', 0);
    expect(p.get('203.0.113.5', 20_000)).toBe('srv-2');
    expect(p.get('203.0.113.5', 45_000)).toBe('srv-2');
    expect(p.get('203.0.113.5', 80_000)).toBeUndefined();
  });
});

describe('entries learnt with their remaining time (session sync)', () => {
  it('expires an inserted entry after its remaining time, and never ages an existing one', () => {
    const t = new ConnTrackTable<string>({ timeouts });
    t.insert('a', 'srv-1', 'udp', 1_000, 4_000); // 10 s timeout, 4 s left
    expect(t.lookup('a', 4_500)).toBe('srv-1');
    expect(t.peek('a')?.lastSeen).toBe(4_500);
    t.insert('b', 'srv-1', 'udp', 0);
    t.insert('b', 'srv-2', 'udp', 1_000, 1_000); // a peer's older view: value taken, timer kept
    expect(t.peek('b')).toMatchObject({ value: 'srv-2', lastSeen: 0 });
    t.insert('c', 'srv-1', 'udp', 0, 2_000);
    expect(t.lookup('c', 2_000)).toBeUndefined();
  });

  it('persistence: set with remaining time, peek and list without refreshing', () => {
    const p = new PersistenceTable({ timeoutMs: 30_000 });
    p.set('203.0.113.7', 'srv-3', 10_000, 5_000);
    expect(p.peek('203.0.113.7', 12_000)).toEqual({ backendId: 'srv-3', remainingMs: 3_000 });
    expect([...p.entries(12_000)]).toEqual([['203.0.113.7', 'srv-3', 3_000]]);
    expect(p.get('203.0.113.7', 15_000)).toBeUndefined();
  });
});
