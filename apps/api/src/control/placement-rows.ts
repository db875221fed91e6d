import { type Db, lbPlacements } from '@slb/db';
import { eq, sql } from 'drizzle-orm';

/** Where the LBs were placed when the previous controller stopped (lb_placements): LB → its L4 nodes. */
export function storedPlacement(db: Db): Map<string, string[]> {
  const placement = new Map<string, string[]>();
  const rows = db.select().from(lbPlacements).orderBy(lbPlacements.loadBalancerId, lbPlacements.nodeId).all();
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

  constructor(private readonly db: Db) {
    this.clear = db
      .delete(lbPlacements)
      .where(eq(lbPlacements.loadBalancerId, sql.placeholder('lb')))
      .prepare();
    this.add = db
      .insert(lbPlacements)
      .values({ loadBalancerId: sql.placeholder('lb'), nodeId: sql.placeholder('node') })
      .prepare();
  }

  store(placement: ReadonlyMap<string, readonly string[]>, moved: readonly string[]): void {
    if (moved.length === 0) return;
    this.db.transaction(() => {
      for (const lb of moved) {
        this.clear.run({ lb });
        for (const node of placement.get(lb) ?? []) this.add.run({ lb, node });
      }
    });
  }
}
