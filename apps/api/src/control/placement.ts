/** An L4 node as placement sees it. */
export interface PlacementNode {
  id: string;
  capacityWeight: number;
  /** Active connections, the load that points are measured against. */
  activeConnections: number;
}

export interface PlacementLb {
  id: string;
  mode: 'all' | 'spread';
  nodeCount: number | null;
}

/**
 * SoftEther's points: capacity weight against current load, so a node of weight 200 takes twice the
 * load of one of weight 100 before it looks equally full. Higher is better.
 */
export function points(node: PlacementNode, lbsPlaced: number): number {
  if (node.capacityWeight <= 0) return Number.NEGATIVE_INFINITY;
  return node.capacityWeight / (1 + node.activeConnections / 1000 + lbsPlaced);
}

/**
 * Places every LB on nodes: `all` on every eligible node; `spread` on `nodeCount` of them, keeping the
 * nodes it already has while they stay eligible (moving an LB moves its clients), and adding the nodes
 * with the most points. Nodes `rejoining` (online before a controller restart, not back yet) keep the LBs
 * they had and are given none. Pure: the same inputs give the same placement.
 */
export function place(
  lbs: PlacementLb[],
  nodes: PlacementNode[],
  previous: ReadonlyMap<string, string[]>,
  rejoining: ReadonlySet<string> = new Set(),
): Map<string, string[]> {
  const eligible = [...nodes].sort((a, b) => (a.id < b.id ? -1 : 1));
  const ids = new Set(eligible.map((n) => n.id));
  const away = [...rejoining].filter((id) => !ids.has(id));
  const keeps = (id: string) => ids.has(id) || rejoining.has(id);
  const placedCount = new Map<string, number>(eligible.map((n) => [n.id, 0]));
  const result = new Map<string, string[]>();
  const ordered = [...lbs].sort((a, b) => (a.id < b.id ? -1 : 1));
  for (const lb of ordered) {
    if (lb.mode === 'all') {
      // Every write places the whole fleet: the rejoining nodes cost nothing once they are back.
      const before = away.length === 0 ? [] : (previous.get(lb.id) ?? []);
      const kept = away.filter((id) => before.includes(id));
      const onNodes = eligible.map((n) => n.id);
      result.set(lb.id, kept.length === 0 ? onNodes : [...onNodes, ...kept].sort());
      continue;
    }
    const want = Math.min(lb.nodeCount ?? 1, eligible.length + away.length);
    const kept = (previous.get(lb.id) ?? []).filter(keeps).slice(0, want);
    const chosen = [...kept];
    while (chosen.length < want) {
      const best = eligible
        .filter((n) => !chosen.includes(n.id))
        .map((n) => ({ n, p: points(n, placedCount.get(n.id) ?? 0) }))
        .sort((a, b) => b.p - a.p || (a.n.id < b.n.id ? -1 : 1))[0];
      if (!best) break;
      chosen.push(best.n.id);
    }
    for (const id of chosen) placedCount.set(id, (placedCount.get(id) ?? 0) + 1);
    result.set(lb.id, chosen.sort());
  }
  return result;
}
