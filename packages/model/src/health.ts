import { type Static, Type } from '@sinclair/typebox';
import { Nullable, ResourceId, StringEnum } from './common.js';

export const ServerHealthStatus = StringEnum(['normal', 'abnormal', 'unavailable']);
export type ServerHealthStatus = Static<typeof ServerHealthStatus>;

/**
 * Why a server's last check failed, as its tenant sees it. Two reasons only, on purpose: a check is a probe
 * the cloud sends on a tenant's behalf, and a finer reason (connection refused, a non-HTTP banner, a 500)
 * would tell the port's state beyond healthy/unhealthy, making checks a port scanner. `timeout`: nothing
 * decided within the check's timeout (raise it, or the server is slow or unreachable); `failed`: anything
 * else (refused, reset, wrong answer, wrong status). The detail stays in the health workers' log.
 */
export const HEALTH_CHECK_REASONS = ['timeout', 'failed'] as const;
export const HealthCheckReason = StringEnum(HEALTH_CHECK_REASONS, {
  description: "why the last check failed: 'timeout' (no verdict within the check's timeout) or 'failed'",
});
export type HealthCheckReason = Static<typeof HealthCheckReason>;

export const ServerHealth = Type.Object(
  {
    listenerId: ResourceId('listener'),
    serverGroupId: ResourceId('serverGroup'),
    serverId: ResourceId('server'),
    address: Type.String(),
    port: Type.Integer(),
    status: ServerHealthStatus,
    since: Type.String({ format: 'date-time' }),
    lastError: Type.Optional(Nullable(HealthCheckReason)),
  },
  { title: 'ServerHealth' },
);
export type ServerHealth = Static<typeof ServerHealth>;

export const LoadBalancerHealth = Type.Object({ items: Type.Array(ServerHealth) }, { title: 'LoadBalancerHealth' });
