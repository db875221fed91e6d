import type { Store } from '@slb/db';
import { eq, sql } from 'drizzle-orm';

/** Where the LBs were placed when the previous controller stopped (lb_placements): LB → its L4 nodes. */
export async function storedPlacement(store: Store): Promise<Map<string, string[]>> {
  const { t } = store;
  const placement = new Map<string, string[]>();
  const rows = await store.read((q) =>
    q.select().from(t.lbPlacements).orderBy(t.lbPlacements.loadBalancerId, t.lbPlacements.nodeId),
  );
  for (const { loadBalancerId, nodeId } of rows) {
    const ids = placement.get(loadBalancerId);
    if (ids) ids.push(nodeId);
    else placement.set(loadBalancerId, [nodeId]);
  }
  return placement;
}

/**
 * Stores where the LBs that moved are placed now (the rows of a deleted LB or node went with it): in the
 * time of the move, not of the fleet. Prepared statements, one row at a time: a node joining moves every
 * `all` LB, and building multi-row statements cost several times more (about 45 ms for 1,000 LBs).
 */
export class PlacementStore {
  private readonly clear;
  private readonly add;

  constructor(private readonly data: Store) {
    const { t } = data;
    this.clear = data.prepare('hub-placement-clear', (q) =>
      q.delete(t.lbPlacements).where(eq(t.lbPlacements.loadBalancerId, sql.placeholder('lb'))),
    );
    this.add = data.prepare('hub-placement-add', (q) =>
      q.insert(t.lbPlacements).values({ loadBalancerId: sql.placeholder('lb'), nodeId: sql.placeholder('node') }),
    );
  }

  async store(placement: ReadonlyMap<string, readonly string[]>, moved: readonly string[]): Promise<void> {
    if (moved.length === 0) return;
    await this.data.write(async () => {
      for (const lb of moved) {
        await this.clear({ lb });
        for (const node of placement.get(lb) ?? []) await this.add({ lb, node });
      }
    });
  }
}
