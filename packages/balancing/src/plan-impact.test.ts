import { describe, expect, it } from 'vitest';
import { buildMaglevTable } from './maglev.js';
import { type PoolBackend, type PoolConfig, poolCandidates, poolImpact } from './plan-impact.js';
import { createScheduler, type SchedulerKind } from './schedulers/index.js';

const srv = (i: number, weight = 100, healthy = true): PoolBackend => ({
  serverId: `srv-${String(i).padStart(20, '0')}`,
  address: `10.0.0.${i}`,
  port: 8080,
  weight,
  healthy,
});
const pool = (scheduler: SchedulerKind, backends: PoolBackend[], drainSeconds = 30): PoolConfig => ({
  scheduler,
  drainSeconds,
  backends,
});
const four = [srv(1), srv(2), srv(3), srv(4)];

/** Share of slots whose owner differs between two tables built as the L4 node builds them. */
function slotChurn(before: PoolBackend[], after: PoolBackend[]): number {
  const table = (bs: PoolBackend[]) => {
    const t = buildMaglevTable(poolCandidates(bs).map((b) => ({ id: b.serverId, weight: b.weight })));
    return Array.from(t.slots, (s) => t.backendIds[s]);
  };
  const a = table(before);
  const b = table(after);
  return a.filter((owner, i) => owner !== b[i]).length / a.length;
}

/** Share of random client addresses whose `sch` pick changes, through the schedulers the nodes run. */
function bruteForceChurn(before: PoolBackend[], after: PoolBackend[], clients = 20_000): number {
  const pick = (bs: PoolBackend[]) => {
    const candidates = poolCandidates(bs);
    const s = createScheduler('sch', { backends: candidates.map((b) => ({ id: b.serverId, weight: b.weight })) });
    return (srcAddr: string) =>
      candidates[s.pick({ srcAddr, srcPort: 40000, dstAddr: '127.1.0.1', dstPort: 80, protocol: 'tcp' })]?.serverId;
  };
  const a = pick(before);
  const b = pick(after);
  let seed = 12345;
  let moved = 0;
  for (let i = 0; i < clients; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const addr = `${(seed >>> 24) & 255}.${(seed >>> 16) & 255}.${(seed >>> 8) & 255}.${seed & 255}`;
    if (a(addr) !== b(addr)) moved++;
  }
  return moved / clients;
}

describe('poolImpact', () => {
  it('is null when the pool forwards as before, whatever the order of its backends', () => {
    expect(poolImpact(pool('sch', four), pool('sch', [...four].reverse()))).toBeNull();
    expect(poolImpact(null, null)).toBeNull();
  });

  it('sch, one of four equal servers removed: about a quarter of the flows move, as the tables and a brute force say', () => {
    const after = four.slice(0, 3);
    const impact = poolImpact(pool('sch', four), pool('sch', after))!;
    expect(impact.change).toBe('changed');
    expect(impact.method).toBe('maglev');
    expect(impact.movedShare).toBe(slotChurn(four, after));
    expect(impact.movedShare).toBeCloseTo(0.25, 2);
    expect(Math.abs(bruteForceChurn(four, after) - impact.movedShare!)).toBeLessThan(0.015);
    const gone = impact.servers.find((s) => s.serverId === four[3]!.serverId)!;
    expect(gone).toMatchObject({ weightBefore: 100, weightAfter: null, shareAfter: 0, takesNewConnections: false });
    expect(gone.shareBefore).toBeCloseTo(0.25, 3);
    expect(gone.drainSeconds).toBe(30);
    for (const s of impact.servers.slice(0, 3)) {
      expect(s).toMatchObject({ takesNewConnections: true, drainSeconds: null });
      expect(s.shareAfter).toBeCloseTo(1 / 3, 3);
    }
  });

  it('sch, a weight halved: flows move only off that server, and the shares follow the weights', () => {
    const after = [srv(1), srv(2), srv(3), srv(4, 50)];
    const impact = poolImpact(pool('sch', four), pool('sch', after))!;
    expect(impact.movedShare).toBe(slotChurn(four, after));
    expect(Math.abs(bruteForceChurn(four, after) - impact.movedShare!)).toBeLessThan(0.015);
    const halved = impact.servers[3]!;
    expect(halved.shareAfter).toBeCloseTo(50 / 350, 3);
    expect(halved.takesNewConnections).toBe(true);
    // At least the share it gives up moves; consistent hashing keeps the rest mostly in place.
    expect(impact.movedShare!).toBeGreaterThanOrEqual(0.25 - 50 / 350 - 0.001);
    expect(impact.movedShare!).toBeLessThan(0.3);
  });

  it('tch counts slots too; a server at a new port is another backend for the node', () => {
    const moved = [srv(1), srv(2), srv(3), { ...srv(4), port: 9090 }];
    const impact = poolImpact(pool('tch', four), pool('tch', moved))!;
    expect(impact.method).toBe('maglev');
    expect(impact.movedShare).toBeCloseTo(0.25, 2);
    expect(impact.servers).toHaveLength(5);
    expect(impact.servers.filter((s) => !s.takesNewConnections).map((s) => s.port)).toEqual([8080]);
  });

  it('wrr, one of four removed: its quarter moves, and it drains for the listener’s drain timeout', () => {
    const impact = poolImpact(pool('wrr', four, 45), pool('wrr', four.slice(0, 3), 45))!;
    expect(impact).toMatchObject({ change: 'changed', method: 'weights', movedShare: 0.25 });
    expect(impact.servers[3]).toMatchObject({
      shareBefore: 0.25,
      shareAfter: 0,
      takesNewConnections: false,
      drainSeconds: 45,
    });
  });

  it('wrr, weight set to 0: the server stays a backend but takes no new flows and drains', () => {
    const impact = poolImpact(pool('wlc', four), pool('wlc', [srv(1), srv(2), srv(3), srv(4, 0)]))!;
    expect(impact.movedShare).toBe(0.25);
    expect(impact.servers[3]).toMatchObject({ weightBefore: 100, weightAfter: 0, takesNewConnections: false });
    expect(impact.servers[3]!.drainSeconds).toBe(30);
  });

  it('wrr, only weights change: no held client loses its server', () => {
    const impact = poolImpact(pool('wrr', four), pool('wrr', [srv(1, 300), srv(2), srv(3), srv(4)]))!;
    expect(impact.movedShare).toBe(0);
    expect(impact.servers[0]!.shareAfter).toBeCloseTo(0.5, 10);
  });

  it('rr shares are equal whatever the weights', () => {
    const impact = poolImpact(pool('rr', [srv(1, 10), srv(2, 90)]), pool('rr', [srv(1, 10)]))!;
    expect(impact.servers.map((s) => s.shareBefore)).toEqual([0.5, 0.5]);
    expect(impact.movedShare).toBe(0.5);
  });

  it('added: no flow moves, it starts taking its share; removed: every flow loses it and every server drains', () => {
    const added = poolImpact(null, pool('sch', four))!;
    expect(added).toMatchObject({ change: 'added', movedShare: null });
    expect(added.servers.every((s) => s.weightBefore === null && s.takesNewConnections)).toBe(true);
    const removed = poolImpact(pool('wrr', four, 12), null)!;
    expect(removed).toMatchObject({ change: 'removed', movedShare: 1, method: 'weights' });
    expect(removed.servers.every((s) => !s.takesNewConnections && s.drainSeconds === 12 && s.shareAfter === 0)).toBe(
      true,
    );
  });

  it('health is part of forwarding: the nodes fail open to every server while none is healthy', () => {
    const down = four.map((b) => ({ ...b, healthy: false }));
    const oneUp = [srv(1), ...down.slice(1)];
    const impact = poolImpact(pool('wrr', down), pool('wrr', oneUp))!;
    expect(impact.servers.map((s) => s.shareBefore)).toEqual([0.25, 0.25, 0.25, 0.25]);
    expect(impact.servers.map((s) => s.shareAfter)).toEqual([1, 0, 0, 0]);
    expect(impact.movedShare).toBe(0.75);
    // Unhealthy but configured with a weight: they still take new connections once healthy again.
    expect(impact.servers.every((s) => s.takesNewConnections)).toBe(true);
  });

  it('a scheduler change that changes the hash keeps a flow on its server only by chance', () => {
    const impact = poolImpact(pool('sch', four), pool('wrr', four))!;
    expect(impact.method).toBe('weights');
    expect(impact.movedShare).toBeCloseTo(0.75, 3);
  });
});
