import type { NodeLoadReport } from '@slb/model';

/**
 * Ceilings on what a node reports about itself. A node is trusted to say how loaded it is (nothing else can
 * tell), but not without bound: a value past these is a broken or hostile node, and clamping keeps one node's
 * report from dwarfing the fleet's in placement points or in the API's numbers.
 */
export const LOAD_LIMITS = {
  activeConnections: 10_000_000,
  newConnectionsPerSecond: 1_000_000,
  requestsPerSecond: 1_000_000,
} as const;

const clamp = (v: number, max: number) => (Number.isFinite(v) && v > 0 ? Math.min(v, max) : 0);

export function clampLoad(load: NodeLoadReport): NodeLoadReport {
  return {
    activeConnections: Math.round(clamp(load.activeConnections, LOAD_LIMITS.activeConnections)),
    newConnectionsPerSecond: clamp(load.newConnectionsPerSecond, LOAD_LIMITS.newConnectionsPerSecond),
    requestsPerSecond: clamp(load.requestsPerSecond, LOAD_LIMITS.requestsPerSecond),
  };
}
