import { describe, expect, it } from 'vitest';
import { type PlacementNode, place, points } from './placement.js';

const node = (id: string, capacityWeight = 100, activeConnections = 0): PlacementNode => ({
  id,
  capacityWeight,
  activeConnections,
});

describe('placement', () => {
  it('mode all places an LB on every eligible node', () => {
    const result = place([{ id: 'lb-1', mode: 'all', nodeCount: null }], [node('b'), node('a')], new Map());
    expect(result.get('lb-1')).toEqual(['a', 'b']);
  });

  it('spread picks nodeCount nodes by points: capacity weight against load', () => {
    const nodes = [node('a', 100, 5000), node('b', 100, 0), node('c', 300, 2000)];
    const result = place([{ id: 'lb-1', mode: 'spread', nodeCount: 2 }], nodes, new Map());
    expect(result.get('lb-1')).toEqual(['b', 'c']);
    expect(points(node('x', 200, 0), 0)).toBeGreaterThan(points(node('y', 100, 0), 0));
    expect(points(node('z', 0, 0), 0)).toBe(Number.NEGATIVE_INFINITY);
  });

  it('spreads many LBs evenly across equal nodes', () => {
    const lbs = Array.from({ length: 30 }, (_, i) => ({
      id: `lb-${String(i).padStart(2, '0')}`,
      mode: 'spread' as const,
      nodeCount: 1,
    }));
    const result = place(lbs, [node('a'), node('b'), node('c')], new Map());
    const perNode = new Map<string, number>();
    for (const ids of result.values()) for (const id of ids) perNode.set(id, (perNode.get(id) ?? 0) + 1);
    expect([...perNode.values()]).toEqual([10, 10, 10]);
  });

  it('keeps an LB where it is while its nodes stay, and replaces only a node that left', () => {
    const previous = new Map([['lb-1', ['a', 'b']]]);
    const stay = place(
      [{ id: 'lb-1', mode: 'spread', nodeCount: 2 }],
      [node('a'), node('b', 100, 9000), node('c')],
      previous,
    );
    expect(stay.get('lb-1')).toEqual(['a', 'b']);
    const moved = place([{ id: 'lb-1', mode: 'spread', nodeCount: 2 }], [node('a'), node('c')], previous);
    expect(moved.get('lb-1')).toEqual(['a', 'c']);
  });

  it('leaves the LBs of nodes rejoining after a controller restart where they were, and gives those nodes no new one', () => {
    const previous = new Map([
      ['lb-1', ['b']],
      ['lb-2', ['a', 'b']],
      ['lb-3', ['a']],
      ['lb-4', ['a', 'b']],
    ]);
    const lbs = [
      { id: 'lb-1', mode: 'spread' as const, nodeCount: 1 },
      { id: 'lb-2', mode: 'spread' as const, nodeCount: 2 },
      { id: 'lb-3', mode: 'spread' as const, nodeCount: 2 },
      { id: 'lb-4', mode: 'all' as const, nodeCount: null },
      { id: 'lb-5', mode: 'all' as const, nodeCount: null }, // created while b was away
      { id: 'lb-6', mode: 'spread' as const, nodeCount: 1 },
    ];
    const rejoining = place(lbs, [node('a')], previous, new Set(['b']));
    expect(Object.fromEntries(rejoining)).toEqual({
      'lb-1': ['b'],
      'lb-2': ['a', 'b'],
      'lb-3': ['a'],
      'lb-4': ['a', 'b'],
      'lb-5': ['a'],
      'lb-6': ['a'],
    });
    // Without it, the first node back takes b's LBs, and keeps them when b is back.
    const gone = place(lbs, [node('a')], previous);
    expect(gone.get('lb-1')).toEqual(['a']);
    expect(place(lbs, [node('a'), node('b')], gone).get('lb-1')).toEqual(['a']);
  });

  it('is deterministic whatever the input order', () => {
    const lbs = [
      { id: 'lb-2', mode: 'spread' as const, nodeCount: 1 },
      { id: 'lb-1', mode: 'spread' as const, nodeCount: 2 },
    ];
    const nodes = [node('c'), node('a'), node('b')];
    expect([...place(lbs, nodes, new Map())]).toEqual(
      [...place([...lbs].reverse(), [...nodes].reverse(), new Map())].sort(),
    );
  });
});

describe('placement with nodes split between API replicas', () => {
  const lb = (nodeCount: number) => ({ id: 'lb-1', mode: 'spread' as const, nodeCount });
  const elsewhere = (hosts: { nodeId: string; serves: boolean }[], serving: string[] = []) => ({
    hosts: new Map([['lb-1', hosts]]),
    serves: (id: string) => serving.includes(id),
  });

  it("counts a spread LB's hosts on other replicas towards nodeCount: only the rest is placed here", () => {
    const nodes = [node('a1'), node('a2'), node('a3')];
    expect(
      place([lb(2)], nodes, new Map(), new Set(), elsewhere([{ nodeId: 'b1', serves: true }])).get('lb-1'),
    ).toEqual(['a1']);
    const two = elsewhere([
      { nodeId: 'b1', serves: true },
      { nodeId: 'b2', serves: false },
    ]);
    expect(place([lb(2)], nodes, new Map(), new Set(), two).get('lb-1')).toEqual([]);
    // Mode all is every replica's own nodes: nothing elsewhere changes it.
    const all = [{ id: 'lb-1', mode: 'all' as const, nodeCount: null }];
    expect(place(all, nodes, new Map(), new Set(), two).get('lb-1')).toEqual(['a1', 'a2', 'a3']);
  });

  it('trims hosts past nodeCount by the same rule on both replicas: exactly nodeCount remain, serving ones first', () => {
    // Both placed nodeCount of their own before they saw each other's (a node moved between replicas).
    const before = { a: new Map([['lb-1', ['a1', 'a2']]]), b: new Map([['lb-1', ['b1', 'b2']]]) };
    for (const [servingHere, servingThere] of [
      [
        ['a1', 'a2'],
        ['b1', 'b2'],
      ],
      [['a2'], ['b1', 'b2']],
      [[], []],
    ]) {
      const hostsOf = (ids: string[], serving: string[]) =>
        ids.map((nodeId) => ({ nodeId, serves: serving.includes(nodeId) }));
      const onA = place([lb(2)], [node('a1'), node('a2')], before.a, new Set(), {
        hosts: new Map([['lb-1', hostsOf(['b1', 'b2'], servingThere ?? [])]]),
        serves: (id) => (servingHere ?? []).includes(id),
      }).get('lb-1');
      const onB = place([lb(2)], [node('b1'), node('b2')], before.b, new Set(), {
        hosts: new Map([['lb-1', hostsOf(['a1', 'a2'], servingHere ?? [])]]),
        serves: (id) => (servingThere ?? []).includes(id),
      }).get('lb-1');
      const remaining = [...(onA ?? []), ...(onB ?? [])];
      expect(remaining).toHaveLength(2);
      if (servingHere?.length === 1) expect(remaining).toContain('a2');
    }
  });

  it('keeps the host that serves over one that does not yet, whatever their rank', () => {
    const here = place(
      [lb(1)],
      [node('a1')],
      new Map([['lb-1', ['a1']]]),
      new Set(),
      elsewhere([{ nodeId: 'b1', serves: true }]),
    );
    expect(here.get('lb-1')).toEqual([]);
    const there = place(
      [lb(1)],
      [node('b1')],
      new Map([['lb-1', ['b1']]]),
      new Set(),
      elsewhere([{ nodeId: 'a1', serves: false }], ['b1']),
    );
    expect(there.get('lb-1')).toEqual(['b1']);
  });

  it('counts a node online here and named elsewhere (it just moved here) as here, one only rejoining here as there', () => {
    const moved = elsewhere([{ nodeId: 'a1', serves: true }]);
    expect(place([lb(1)], [node('a1')], new Map([['lb-1', ['a1']]]), new Set(), moved).get('lb-1')).toEqual(['a1']);
    // b1 is connected to the other replica, which names it: this one does not keep the LB on it too.
    const rejoining = new Set(['b1']);
    const onB = elsewhere([{ nodeId: 'b1', serves: true }]);
    expect(place([lb(1)], [node('a1')], new Map([['lb-1', ['b1']]]), rejoining, onB).get('lb-1')).toEqual([]);
    expect(place([lb(2)], [node('a1')], new Map([['lb-1', ['b1']]]), rejoining, onB).get('lb-1')).toEqual(['a1']);
  });
});
