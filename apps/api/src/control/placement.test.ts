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
