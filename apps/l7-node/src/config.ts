import { type Static, Type } from '@sinclair/typebox';
import { type NodeConfigResult, NodeEnvProperties, parseNodeConfig } from '@slb/node-runtime';

const Env = Type.Object({
  // Where Prometheus scrapes this node; 0 picks a free port (tests), logged at start.
  SLB_METRICS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 9101 }),
  // A connection on a PROXY port that has not sent its whole header by then is closed (slow-header bound).
  SLB_PROXY_HEADER_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60_000, default: 5000 }),
  // How long a removed listener's in-flight requests may finish after a reload or on shutdown.
  SLB_DRAIN_MS: Type.Integer({ minimum: 0, maximum: 600_000, default: 10_000 }),
  // 0 serves every request through node:http + undici (the raw-socket fast path off): for comparison
  // benches, or to opt out.
  SLB_L7_FAST_PATH: Type.Union([Type.Literal('0'), Type.Literal('1')], { default: '1' }),
  // Processes serving the node's listeners, one per core; more than 1 adds a primary process that holds the
  // control channel and the metrics port (workers.ts).
  SLB_L7_WORKERS: Type.Integer({ minimum: 1, maximum: 64, default: 1 }),
  ...NodeEnvProperties,
});

export type L7Config = Static<typeof Env> & { configPath: string | undefined };
export type ConfigResult = NodeConfigResult<Static<typeof Env>>;

/** Parses argv (`--config <file>`) and the environment; a bad value is one line, never a stack. */
export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ConfigResult {
  return parseNodeConfig(Env, argv, env, 'l7-snapshot.json');
}
