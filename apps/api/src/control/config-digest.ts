import { createHash } from 'node:crypto';

// The digest of what a node holds (SnapshotDigest): any controller process computes the same one from the same
// fleet, so one that did not send the node its config can still tell it already holds what it would send.

/** One listener as sent (its id and diff key, see ConfigDelivery's Wanted), as 128 bits. */
export function listenerHash(id: string, json: string): bigint {
  return BigInt(`0x${createHash('sha256').update(id).update('\0').update(json).digest('hex').slice(0, 32)}`);
}

/**
 * The digest of a node's whole config: its listeners' hashes combined by XOR (a delta updates that with what it
 * removes and upserts, in the time of those listeners, not of the node's thousands), what every first snapshot
 * shares, and its L7 pool or L4 nodes.
 */
export function configDigest(parts: { listeners: bigint; shared: string; peers: string }): string {
  return createHash('sha256')
    .update(parts.listeners.toString(16))
    .update('\0')
    .update(parts.shared)
    .update('\0')
    .update(parts.peers)
    .digest('hex')
    .slice(0, 32);
}
