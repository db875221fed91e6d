import { compareRivals, type Rival } from './vip-serving.js';

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
 * The hosts other API replicas placed spread LBs on, among the nodes connected to them (see RuntimeShare):
 * with nodes split between replicas, each placed `nodeCount` of its own, so an LB ran on up to replicas ×
 * nodeCount nodes.
 */
export interface HostsElsewhere {
  hosts: ReadonlyMap<string, readonly Rival[]>;
  /** Whether a node here serves the LB (applied its config, binds its listeners): it keeps it first. */
  serves(nodeId: string, lbId: string): boolean;
}

const NOWHERE_ELSE: HostsElsewhere = { hosts: new Map(), serves: () => false };

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
 *
 * A spread LB's hosts on other replicas (`elsewhere`) count towards its `nodeCount`: only the rest is placed
 * here. Hosts of all replicas past `nodeCount` are trimmed by the same rule on every replica (those serving
 * it first, then by rank for the LB, as VIP binders are), so the replicas agree on which remain.
 */
export function place(
  lbs: PlacementLb[],
  nodes: PlacementNode[],
  previous: ReadonlyMap<string, string[]>,
  rejoining: ReadonlySet<string> = new Set(),
  elsewhere: HostsElsewhere = NOWHERE_ELSE,
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
    const nodeCount = lb.nodeCount ?? 1;
    let want = Math.min(nodeCount, eligible.length + away.length);
    // A node online here and named elsewhere (it just moved here) is here; one rejoining here (after this
    // replica's restart, or the fleet's coming over) that another replica names is there.
    const others = (elsewhere.hosts.get(lb.id) ?? []).filter((r) => !ids.has(r.nodeId));
    const there = new Set(others.map((r) => r.nodeId));
    let kept = (previous.get(lb.id) ?? []).filter((id) => keeps(id) && !there.has(id)).slice(0, want);
    if (others.length > 0) {
      const mine = kept.map((nodeId) => ({ nodeId, serves: elsewhere.serves(nodeId, lb.id) }));
      const top = [...mine, ...others].sort((a, b) => compareRivals(lb.id, a, b)).slice(0, nodeCount);
      const remaining = new Set(top.map((r) => r.nodeId));
      kept = kept.filter((id) => remaining.has(id));
      want = Math.min(want, nodeCount - others.filter((r) => remaining.has(r.nodeId)).length);
    }
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
