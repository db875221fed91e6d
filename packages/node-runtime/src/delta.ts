/** A snapshot's listeners after a delta: remove, then upsert by id, keeping the snapshot's order stable. */
export function applyListenerDelta<L extends { id: string }>(current: L[], upsert: L[], remove: string[]): L[] {
  const removed = new Set(remove);
  const byId = new Map(current.filter((l) => !removed.has(l.id)).map((l) => [l.id, l]));
  for (const l of upsert) byId.set(l.id, l);
  return [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
