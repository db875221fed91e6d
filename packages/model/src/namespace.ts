import { type Static, Type } from '@sinclair/typebox';

/**
 * A deployment's Redis namespace. Every Redis name a deployment uses is derived from its cluster id (made
 * at the API's first start and kept in its database), so deployments that share a Redis never read,
 * replace or ack each other's queues, keys and streams, without anyone choosing names by hand. The
 * explicit variables (SLB_HEALTH_QUEUE, SLB_HEALTH_KEY_PREFIX, SLB_SESSION_SYNC_PREFIX) still override.
 */
export const DeploymentNamespace = Type.Object(
  {
    /** The deployment's cluster id, `slb-<12 hex>`. */
    clusterId: Type.String({ minLength: 1, maxLength: 100 }),
    /** BullMQ queue of the health checks (no `:`, BullMQ's own separator). */
    healthQueue: Type.String({ minLength: 1, maxLength: 100, pattern: '^[^:\\s]+$' }),
    /** Prefix of the health fleet's keys and transition stream. */
    healthKeyPrefix: Type.String({ minLength: 1, maxLength: 100, pattern: '^\\S+$' }),
    /** Prefix of the nodes' session-sync streams and tables. */
    sessionSyncPrefix: Type.String({ minLength: 1, maxLength: 100, pattern: '^\\S+$' }),
  },
  { additionalProperties: false },
);
export type DeploymentNamespace = Static<typeof DeploymentNamespace>;

/** Where the API serves its namespace to the health workers (no token: the names are not secrets). */
export const NAMESPACE_PATH = '/control/v1/namespace';

/** The names a deployment uses by default, derived from its cluster id alone. */
export function namespaceOf(clusterId: string): DeploymentNamespace {
  return {
    clusterId,
    healthQueue: `${clusterId}-health`,
    healthKeyPrefix: `${clusterId}:health`,
    sessionSyncPrefix: `${clusterId}:sync`,
  };
}

/**
 * Prefix of the traffic metrics buckets the API keeps in Redis. Not part of DeploymentNamespace: no worker or
 * node reads them, only the API (SLB_METRICS_KEY_PREFIX overrides it).
 */
export function metricsKeyPrefixOf(clusterId: string): string {
  return `${clusterId}:metrics`;
}

/** The derived names with the operator's explicit ones (set, non-empty) in their place. */
export function namespaceWithOverrides(
  clusterId: string,
  overrides: { healthQueue?: string; healthKeyPrefix?: string; sessionSyncPrefix?: string },
): DeploymentNamespace {
  const derived = namespaceOf(clusterId);
  return {
    clusterId,
    healthQueue: overrides.healthQueue || derived.healthQueue,
    healthKeyPrefix: overrides.healthKeyPrefix || derived.healthKeyPrefix,
    sessionSyncPrefix: overrides.sessionSyncPrefix || derived.sessionSyncPrefix,
  };
}
