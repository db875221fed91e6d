import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { FleetPlacement } from './fleet-placement.js';
import type { VipNode } from './vip-serving.js';

// Placement kept across recompiles: it moves when nodes come and go, and freezes when most vanish at once.

const log = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;
const lbs = [{ id: 'lb_a', mode: 'all' as const, nodeCount: null }];
const node = (id: string) => ({ id, capacityWeight: 100, activeConnections: 0 });
const vip = (id: string): [string, VipNode] => [
  id,
  { id, reusePort: false, channelOpen: true, bound: new Set(), serves: () => false },
];

describe('FleetPlacement', () => {
  it('places LBs on the online nodes and says when that moved', () => {
    const fleet = new FleetPlacement(log);
    const nodes = ['n1', 'n2', 'n3'];
    expect(fleet.update(lbs, nodes.map(node), new Map(nodes.map(vip)), () => null)).toEqual(['lb_a']);
    expect(fleet.placement.get('lb_a')).toEqual(nodes);
    expect(fleet.serving.get('lb_a')?.binders).toHaveLength(1);
    expect(fleet.update(lbs, nodes.map(node), new Map(nodes.map(vip)), () => null)).toEqual([]);
    expect(fleet.onlineChanged(new Set(nodes))).toBe(false);
    expect(fleet.onlineChanged(new Set(['n1', 'n2']))).toBe(true);
    // One of three gone: the LB leaves it.
    expect(fleet.update(lbs, [node('n1'), node('n2')], new Map(nodes.map(vip)), () => null)).toEqual(['lb_a']);
    expect(fleet.placement.get('lb_a')).toEqual(['n1', 'n2']);
  });

  it('keeps the placement when more than half the nodes vanish at once (our network, not theirs)', () => {
    const fleet = new FleetPlacement(log);
    const nodes = ['n1', 'n2', 'n3'];
    fleet.update(lbs, nodes.map(node), new Map(nodes.map(vip)), () => null);
    expect(fleet.update(lbs, [node('n1')], new Map(nodes.map(vip)), () => null)).toEqual([]);
    expect(fleet.placement.get('lb_a')).toEqual(nodes);
    // Still differs from the nodes placed for: the next tick looks again.
    expect(fleet.onlineChanged(new Set(['n1']))).toBe(true);
  });
});
