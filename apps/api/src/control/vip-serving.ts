import { hashString } from '@slb/balancing';

/** How the nodes that host an LB carry its VIP. */
export type VipMode = 'active-active' | 'active-standby';

/** An L4 node hosting LBs, as the choice of who binds a VIP sees it. */
export interface VipNode {
  id: string;
  /** The runtime shares an address:port between processes (SO_REUSEPORT). */
  reusePort: boolean;
  /** Its control channel is open. A node killed on this host closes it at once, long before it looks offline. */
  channelOpen: boolean;
  /** The addresses it said (at hello) it serves listeners on: where a VIP is when this hub has not placed it. */
  bound: ReadonlySet<string>;
  /**
   * It acked this LB's config and binds every listener of it: its hold on the VIP is confirmed. A binder the
   * hub only just chose, or one that cannot bind (another node may hold the VIP), is not.
   */
  serves(lbId: string): boolean;
}

/** A node another API replica chose to bind an LB's VIP (from its runtime parts, see RuntimeShare). */
export interface Rival {
  nodeId: string;
  /** It applied the LB's config and binds every listener of it there. */
  serves: boolean;
}

export interface VipServing {
  mode: VipMode;
  /** The nodes that bind the VIP: every host in active-active, one in active-standby. */
  binders: string[];
}

/**
 * Who binds each LB's VIP. When every node hosting an LB can share the VIP:port (SO_REUSEPORT), they all
 * bind it and the kernel spreads the clients (active-active, LVS behind ECMP). Otherwise one of them binds
 * it (active-standby, as keepalived): the one that had it while its channel stays open, so a VIP does not
 * move while its node lives and serves it; else an open node that says it binds the VIP already (after a
 * controller restart the first node to say hello is given every VIP, and cannot bind those another node
 * still serves: they go back to that node); else the one that had it; else, after a controller restart, a
 * host still `rejoining` (the VIP is most likely with one of them, and the nodes back keep their role); else the
 * open node that ranks first for this LB (rendezvous hashing, so the VIPs of many LBs spread over the nodes
 * and a node's departure moves only its own). Pure.
 *
 * With nodes split between API replicas, each replica chooses among its own nodes, and two nodes were told
 * to bind one VIP (one of them failing with EADDRINUSE for good, so the LB never showed active). `rivals`
 * are the binders other replicas chose: this replica's choice stands only if it wins against them, by the
 * same rule on every replica (rivalWins), so exactly one keeps the VIP and the others' hosts stand by.
 */
export function chooseVipBinders(
  placement: ReadonlyMap<string, readonly string[]>,
  nodes: ReadonlyMap<string, VipNode>,
  previous: ReadonlyMap<string, VipServing>,
  addressOf: (lbId: string) => string | null = () => null,
  rejoining: ReadonlySet<string> = new Set(),
  rivals: ReadonlyMap<string, readonly Rival[]> = new Map(),
): Map<string, VipServing> {
  const result = new Map<string, VipServing>();
  for (const [lbId, hosts] of placement) {
    const known = hosts.map((id) => nodes.get(id)).filter((n) => n !== undefined);
    if (known.length > 0 && known.every((n) => n.reusePort)) {
      result.set(lbId, { mode: 'active-active', binders: [...hosts] });
      continue;
    }
    const before = previous.get(lbId)?.binders[0];
    const open = known.filter((n) => n.channelOpen);
    let owner: string | undefined;
    const address = addressOf(lbId);
    const holder = address === null ? undefined : open.find((n) => n.bound.has(address));
    const kept = open.find((n) => n.id === before);
    const away =
      rejoining.size === 0 ? [] : hosts.filter((id) => rejoining.has(id) && nodes.get(id)?.channelOpen !== true);
    if (kept?.serves(lbId)) owner = kept.id;
    else if (holder !== undefined) owner = holder.id;
    else if (kept !== undefined) owner = kept.id;
    else if (away.length > 0) owner = rankFirst(lbId, away);
    else if (open.length > 0)
      owner = rankFirst(
        lbId,
        open.map((n) => n.id),
      );
    // Nobody reachable: leave the VIP where it was (that node may well still serve it), else the first host.
    else if (before !== undefined && hosts.includes(before)) owner = before;
    else owner = hosts[0];
    const others = (rivals.get(lbId) ?? []).filter((r) => !hosts.includes(r.nodeId));
    if (owner !== undefined && others.length > 0) {
      const mine = { nodeId: owner, serves: owner === before && (nodes.get(owner)?.serves(lbId) ?? false) };
      if (others.some((r) => rivalWins(lbId, r, mine))) owner = undefined;
    }
    result.set(lbId, { mode: 'active-standby', binders: owner === undefined ? [] : [owner] });
  }
  return result;
}

/**
 * Which of two binders of one VIP keeps it: the one that already serves it (the VIP does not move while its
 * node serves), else the one that ranks first for the LB. The same answer on every replica.
 */
export function rivalWins(lbId: string, rival: Rival, mine: Rival): boolean {
  return compareRivals(lbId, rival, mine) < 0;
}

/** Orders nodes of one LB by rivalWins' rule: a node that serves it first, then by rank for the LB. */
export function compareRivals(lbId: string, a: Rival, b: Rival): number {
  if (a.serves !== b.serves) return a.serves ? -1 : 1;
  if (a.nodeId === b.nodeId) return 0;
  return rankFirst(lbId, [a.nodeId, b.nodeId]) === a.nodeId ? -1 : 1;
}

function rankFirst(lbId: string, nodeIds: readonly string[]): string {
  let best = nodeIds[0]!;
  let bestScore = -1;
  for (const id of nodeIds) {
    const score = hashString(`${lbId}|${id}`);
    if (score > bestScore || (score === bestScore && id < best)) {
      best = id;
      bestScore = score;
    }
  }
  return best;
}

export function sameServing(a: ReadonlyMap<string, VipServing>, b: ReadonlyMap<string, VipServing>): boolean {
  if (a.size !== b.size) return false;
  for (const [id, s] of a) {
    const o = b.get(id);
    if (o === undefined || o.mode !== s.mode || o.binders.length !== s.binders.length) return false;
    if (o.binders.some((n, i) => n !== s.binders[i])) return false;
  }
  return true;
}
