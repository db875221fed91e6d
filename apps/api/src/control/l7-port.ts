import { createHash } from 'node:crypto';

import { L7_PORT_BASE, L7_PORT_RANGE } from '@slb/model';

/** The range of ports L7 nodes serve HTTP/HTTPS listeners on, one port per listener (now in @slb/model). */
export { L7_PORT_BASE, L7_PORT_RANGE };

/**
 * Assigns each http/https listener a port on the L7 nodes: a hash of its id, probing forward on a
 * collision. Superseded by listeners.l7_port, allocated at create (services/l7-ports.ts); kept until the
 * compiler reads that column. Deterministic for a given set of listeners, so every compile (and every node) agrees.
 */
export function assignL7Ports(listenerIds: string[]): Map<string, number> {
  const taken = new Set<number>();
  const ports = new Map<string, number>();
  for (const id of [...listenerIds].sort()) {
    let slot = homeSlot(id);
    while (taken.has(slot)) slot = (slot + 1) % L7_PORT_RANGE;
    taken.add(slot);
    ports.set(id, L7_PORT_BASE + slot);
  }
  return ports;
}

/** Each id's hash, kept: the ports are reassigned on every config change, over thousands of listeners. */
const homeSlots = new Map<string, number>();

function homeSlot(id: string): number {
  let slot = homeSlots.get(id);
  if (slot === undefined) {
    if (homeSlots.size >= 200_000) homeSlots.clear(); // deleted listeners' ids would otherwise pile up
    slot = createHash('sha256').update(id).digest().readUInt32BE(0) % L7_PORT_RANGE;
    homeSlots.set(id, slot);
  }
  return slot;
}
