import { type Static, Type } from '@sinclair/typebox';
import {
  DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
  DEFAULT_TENANT_SHARE_OF_NODE,
  MAX_LISTENER_MAX_CONNECTIONS,
} from '@slb/model';
import { type NodeConfigResult, NodeEnvProperties, parseNodeConfig } from '@slb/node-runtime';

const Env = Type.Object({
  // Where Prometheus scrapes this node; 0 picks a free port (tests), logged at start.
  SLB_METRICS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 9100 }),
  // Connections (TCP) or flows (UDP) one client address (IPv6: its /64) holds per listener; 0 turns it off.
  // One source must not take a listener's whole maxConnections (nor the node's file descriptors).
  SLB_MAX_CONNECTIONS_PER_CLIENT: Type.Integer({
    minimum: 0,
    maximum: MAX_LISTENER_MAX_CONNECTIONS,
    default: DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
  }),
  // The share of the node's descriptor budget one tenant's listeners may hold (1: no per-tenant bound), so a
  // flood on one tenant's listeners cannot refuse every other tenant's clients.
  SLB_TENANT_FD_SHARE: Type.Number({ exclusiveMinimum: 0, maximum: 1, default: DEFAULT_TENANT_SHARE_OF_NODE }),
  // `off` keeps this node to active-standby VIPs even where the runtime could share them (SO_REUSEPORT).
  SLB_REUSE_PORT: Type.Union([Type.Literal('auto'), Type.Literal('off')], { default: 'auto' }),
  ...NodeEnvProperties,
});

export type L4Config = Static<typeof Env> & { configPath: string | undefined };
export type ConfigResult = NodeConfigResult<Static<typeof Env>>;

/** Parses argv (`--config <file>`) and the environment; a bad value is one line, never a stack. */
export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ConfigResult {
  return parseNodeConfig(Env, argv, env, 'snapshot.json');
}
