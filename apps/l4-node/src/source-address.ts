import { isIP } from 'node:net';

const WILDCARDS = new Set(['0.0.0.0', '::']);

/**
 * The source address of the node's upstream connections (to L7 nodes and backends, TCP and UDP): its own
 * address (SLB_NODE_ADDRESS), or undefined to let the kernel choose when that is unset, a wildcard (which
 * binds nothing in particular) or a host name (which cannot be bound).
 */
export function upstreamSource(nodeAddress: string | undefined): string | undefined {
  if (nodeAddress === undefined || isIP(nodeAddress) === 0 || WILDCARDS.has(nodeAddress)) return undefined;
  return nodeAddress;
}
