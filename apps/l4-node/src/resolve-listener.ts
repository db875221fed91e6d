import type { NodeSnapshot, SnapshotListener } from '@slb/model';
import { BackendGuard, compileAcl } from '@slb/node-runtime';
import type { BackendSpec } from './backend-pool.js';
import type { ResolvedListener } from './tcp-listener.js';

// A snapshot's listener turned into what a TCP or UDP listener runs with: its ACL compiled, its backends
// checked against the deny list (HTTP listeners: the L7 nodes instead), the node's own side added.

export const isHttp = (l: SnapshotListener) => l.protocol === 'http' || l.protocol === 'https';

/**
 * The guard for a snapshot: its deny set, and the node's own endpoints (every listener's address and
 * port on this node), so a backend that is this node itself is never dialled.
 */
export function guardOf(s: NodeSnapshot): BackendGuard {
  const addresses = new Set<string>();
  const ports = new Set<number>();
  for (const l of s.listeners) {
    ports.add(l.port);
    for (const a of l.bindAddresses) addresses.add(a);
  }
  return new BackendGuard({ deny: s.backendDeny, self: { addresses: [...addresses], ports } });
}

/** What every listener of the node is resolved with, whatever its config. */
export interface NodeSide {
  readonly sourceAddress: string | undefined;
  readonly reusePort: boolean;
}

/** `kept` when some were left out, else `all` itself: the listener's config keeps the only copy. */
const keptOrSame = <T>(all: readonly T[], kept: readonly T[]) => (kept.length === all.length ? all : kept);

/**
 * Backends arrays an apply found to hold distinct servers that are all allowed: the listeners of one backend
 * set share one array, which is checked once (at 10,000 listeners of 100 servers, a million checks).
 */
export type CheckedBackends = WeakSet<SnapshotListener['backends']>;

/**
 * HTTP/HTTPS listeners are spread across the healthy L7 nodes with PROXY v2 (the L7 node terminates).
 * `checked`: the apply's arrays already checked (an array with a denied backend is never added, so each of
 * its listeners counts and logs the denial, as before).
 */
export function resolveListener(
  l: SnapshotListener,
  s: NodeSnapshot,
  allowed: (b: SnapshotListener['backends'][number]) => boolean,
  node: NodeSide,
  checked: CheckedBackends = new WeakSet(),
): ResolvedListener {
  const acl = compileAcl(l.acl);
  if (!acl.ok) throw new Error(`acl: ${acl.reason}`);
  const known = checked.has(l.backends);
  if (!known) {
    const servers = new Set<string>();
    for (const [j, b] of l.backends.entries()) {
      if (servers.has(b.serverId)) throw new Error(`backends/${j}/serverId: duplicate ${b.serverId}`);
      servers.add(b.serverId);
    }
  }
  const l7 = isHttp(l);
  const backends: readonly BackendSpec[] = l7
    ? s.l7Nodes.map((n) => ({
        serverId: n.nodeId,
        address: n.address,
        port: l.l7Port ?? n.port,
        weight: 100,
        healthy: n.healthy,
      }))
    : known
      ? l.backends
      : keptOrSame(l.backends, l.backends.filter(allowed));
  if (!l7 && backends === l.backends) checked.add(l.backends);
  return {
    config: l,
    backends,
    proxyProtocol: l7 ? 'v2' : l.proxyProtocol,
    acl: acl.check,
    sourceAddress: node.sourceAddress,
    reusePort: l.reusePort === true && node.reusePort,
  };
}
