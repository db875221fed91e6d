const byId = <L extends { id: string }>(a: L, b: L) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * A snapshot's listeners after a delta: remove, then upsert by id, in id order. Snapshots arrive sorted by
 * id, so this is one merge pass (a delta touches a few listeners of thousands, many times a second); a base
 * that is not sorted takes the general path.
 */
export function applyListenerDelta<L extends { id: string }>(current: L[], upsert: L[], remove: string[]): L[] {
  const removed = new Set(remove);
  const incoming = [...upsert].sort(byId);
  const out: L[] = [];
  let j = 0;
  let previous: string | undefined;
  for (const l of current) {
    if (previous !== undefined && l.id <= previous) return general(current, upsert, removed);
    previous = l.id;
    while (j < incoming.length && incoming[j]!.id < l.id) out.push(incoming[j++]!);
    if (j < incoming.length && incoming[j]!.id === l.id) {
      out.push(incoming[j++]!);
      continue;
    }
    if (!removed.has(l.id)) out.push(l);
  }
  while (j < incoming.length) out.push(incoming[j++]!);
  for (let i = 1; i < out.length; i++) if (out[i]!.id === out[i - 1]!.id) return general(current, upsert, removed);
  return out;
}

function general<L extends { id: string }>(current: L[], upsert: L[], removed: Set<string>): L[] {
  const map = new Map(current.filter((l) => !removed.has(l.id)).map((l) => [l.id, l]));
  for (const l of upsert) map.set(l.id, l);
  return [...map.values()].sort(byId);
}
