import type { SnapshotListener } from '@slb/model';

// The addresses and ports a listener binds, as keys: to refuse a listener that asks for another's, and to
// tell an update in place from a re-bind.

export function bindKeys(l: SnapshotListener): string[] {
  const transport = l.protocol === 'udp' ? 'udp' : 'tcp';
  return l.bindAddresses.map((a) => `${transport} ${a}:${l.port}`);
}

/** Takes `l`'s addresses in `bound`, or throws naming the listener that holds one of them. */
export function claimBinds(bound: Map<string, string>, l: SnapshotListener): void {
  const keys = bindKeys(l);
  for (const key of keys) {
    const holder = bound.get(key);
    if (holder !== undefined && holder !== l.id) throw new Error(`${key} is bound by listener ${holder}`);
  }
  for (const key of keys) bound.set(key, l.id);
}

/** What decides whether a listener can be updated in place or must be re-bound. */
export function bindSpec(l: SnapshotListener): string {
  const transport = l.protocol === 'udp' ? 'udp' : 'tcp';
  // reusePort is a bind option too: switching it means binding again.
  return `${transport}|${l.port}|${[...l.bindAddresses].sort().join(',')}|${l.reusePort === true ? 'shared' : ''}`;
}
