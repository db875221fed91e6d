const byId = <L extends { id: string }>(a: L, b: L) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * A snapshot's listeners after a delta: remove, then upsert by id, in id order. Snapshots arrive sorted by
 * id, so this is one merge pass (a delta touches a few listeners of thousands, many times a second); a base
 * that is not sorted takes the general path.
 */
export function applyListenerDelta<L extends { id: string }>(current: L[], upsert: L[], remove: string[]): L[] {
  // A base this function produced is known to be sorted and unique: patch it by binary search, a few
  // splices instead of comparing thousands of ids.
  const out = knownSorted.has(current) ? patch(current, upsert, remove) : merge(current, upsert, remove);
  knownSorted.add(out);
  return out;
}

/** Arrays returned by applyListenerDelta: sorted by id, ids unique. */
const knownSorted = new WeakSet<object>();

function patch<L extends { id: string }>(current: L[], upsert: L[], remove: string[]): L[] {
  const out = current.slice();
  for (const id of remove) {
    const i = lowerBound(out, id);
    if (out[i]?.id === id) out.splice(i, 1);
  }
  for (const l of upsert) {
    const i = lowerBound(out, l.id);
    if (out[i]?.id === l.id) out[i] = l;
    else out.splice(i, 0, l);
  }
  return out;
}

/** First index whose id is not below `id`. */
function lowerBound(list: readonly { id: string }[], id: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]!.id < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function merge<L extends { id: string }>(current: L[], upsert: L[], remove: string[]): L[] {
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
