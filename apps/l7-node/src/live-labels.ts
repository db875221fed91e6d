import type { L7NodeSnapshot } from '@slb/model';
import type { LiveLabels } from './metrics.js';

// Which metric series of listeners and backends are still in use, for pruning the others after a change.

/** The label values still in use: those of the snapshot, and any of listeners still draining. */
export function liveLabels(snapshot: L7NodeSnapshot, draining: ReadonlySet<string>): LiveLabels {
  const listeners = new Set(snapshot.listeners.map((l) => l.id));
  const listenerBackends = new Set<string>();
  const groupBackends = new Set<string>();
  for (const l of snapshot.listeners) {
    for (const g of l.serverGroups) {
      for (const b of g.backends) {
        listenerBackends.add(`${l.id}/${b.serverId}`);
        groupBackends.add(`${g.id}/${b.serverId}`);
      }
    }
  }
  return {
    listener: (id) => listeners.has(id) || draining.has(id),
    // A draining listener's requests may still count against any of its old backends.
    listenerBackend: (l, b) => listenerBackends.has(`${l}/${b}`) || draining.has(l),
    groupBackend: (g, b) => groupBackends.has(`${g}/${b}`) || draining.size > 0,
  };
}
