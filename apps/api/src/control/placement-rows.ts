import { type Db, lbPlacements } from '@slb/db';
import { inArray } from 'drizzle-orm';

const CHUNK = 400;

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
 * time of the move, not of the fleet.
 */
export function storePlacement(
  db: Db,
  placement: ReadonlyMap<string, readonly string[]>,
  moved: readonly string[],
): void {
  if (moved.length === 0) return;
  const rows = moved.flatMap((id) => (placement.get(id) ?? []).map((nodeId) => ({ loadBalancerId: id, nodeId })));
  db.transaction((tx) => {
    for (let i = 0; i < moved.length; i += CHUNK) {
      tx.delete(lbPlacements)
        .where(inArray(lbPlacements.loadBalancerId, moved.slice(i, i + CHUNK)))
        .run();
    }
    for (let i = 0; i < rows.length; i += CHUNK)
      tx.insert(lbPlacements)
        .values(rows.slice(i, i + CHUNK))
        .run();
  });
}
