import type { FastifyBaseLogger } from 'fastify';
import { type PlacementLb, type PlacementNode, place } from './placement.js';
import { chooseVipBinders, type Rival, type VipNode, type VipServing } from './vip-serving.js';

/** What other API replicas chose among the nodes connected to them, per LB (see RuntimeShare). */
export interface Elsewhere {
  /** The nodes they told to bind the VIP. */
  binders: ReadonlyMap<string, readonly Rival[]>;
  /** A spread LB's online hosts there. */
  hosts: ReadonlyMap<string, readonly Rival[]>;
}

export const NOTHING_ELSEWHERE: Elsewhere = { binders: new Map(), hosts: new Map() };

/** More than this share of L4 nodes vanishing at once looks like our own network fault, not the fleet's. */
const CIRCUIT_BREAKER_SHARE = 0.5;

/**
 * Where each LB runs (placement) and who binds its VIP (serving), kept across recompiles: both prefer what
 * they had, so LBs and VIPs move only when they must.
 */
export class FleetPlacement {
  /** LB → the L4 nodes hosting it. */
  placement = new Map<string, string[]>();
  /** LB → how its hosts carry its VIP and which of them bind it (see chooseVipBinders). */
  serving = new Map<string, VipServing>();
  /** The online L4 nodes the placement was last made for. */
  private lastOnline = new Set<string>();

  constructor(
    private readonly log: FastifyBaseLogger,
    /** Where the previous controller left the LBs (lb_placements): placing starts from there. */
    stored: ReadonlyMap<string, string[]> = new Map(),
  ) {
    this.placement = new Map(stored);
  }

  /** The online L4 nodes are no longer those placed for: time to place again. */
  onlineChanged(online: ReadonlySet<string>): boolean {
    return online.size !== this.lastOnline.size || [...online].some((id) => !this.lastOnline.has(id));
  }

  /**
   * Places the LBs on the online L4 nodes (unless most of them vanished at once) and chooses their VIP
   * binders. Returns the LBs whose placement or binders moved (an LB created or deleted among them): their
   * nodes need their config again. The LBs of nodes `rejoining` after a controller restart stay theirs.
   * `elsewhere`: what other API replicas chose among their own nodes: the VIP binders (see chooseVipBinders)
   * and the hosts of spread LBs (see place).
   */
  update(
    lbs: PlacementLb[],
    online: PlacementNode[],
    vipNodes: ReadonlyMap<string, VipNode>,
    addressOf: (lbId: string) => string | null,
    rejoining: ReadonlySet<string> = new Set(),
    elsewhere: Elsewhere = NOTHING_ELSEWHERE,
  ): string[] {
    const previousPlacement = this.placement;
    const previousServing = this.serving;
    const onlineIds = new Set(online.map((n) => n.id));
    const lost = [...this.lastOnline].filter((id) => !onlineIds.has(id)).length;
    if (this.lastOnline.size >= 2 && lost / this.lastOnline.size > CIRCUIT_BREAKER_SHARE) {
      // Circuit breaker: keep the placement; the nodes most likely still serve, we just cannot see them.
      this.log.warn({ lost, of: this.lastOnline.size }, 'most L4 nodes vanished at once: placement frozen');
    } else {
      // A node rejoining most likely still serves what it had (it has no session here to say so).
      const serves = (id: string, lbId: string) => vipNodes.get(id)?.serves(lbId) ?? rejoining.has(id);
      this.placement = place(lbs, online, this.placement, rejoining, { hosts: elsewhere.hosts, serves });
      this.lastOnline = onlineIds;
    }
    const { binders } = elsewhere;
    this.serving = chooseVipBinders(this.placement, vipNodes, previousServing, addressOf, rejoining, binders);
    const moved = new Set([
      ...movedIn(previousPlacement, this.placement, sameNodes),
      ...movedIn(previousServing, this.serving, (a, b) => a.mode === b.mode && sameNodes(a.binders, b.binders)),
    ]);
    return [...moved];
  }
}

const sameNodes = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((n, i) => n === b[i]);

/** The keys added, removed or changed between two maps. */
function movedIn<T>(a: ReadonlyMap<string, T>, b: ReadonlyMap<string, T>, same: (x: T, y: T) => boolean): string[] {
  const out: string[] = [];
  for (const [id, x] of a) {
    const y = b.get(id);
    if (y === undefined || !same(x, y)) out.push(id);
  }
  for (const id of b.keys()) if (!a.has(id)) out.push(id);
  return out;
}
