import { type Static, Type } from '@sinclair/typebox';
import { type NodeConfigResult, NodeEnvProperties, parseNodeConfig } from '@slb/node-runtime';

const Env = Type.Object({
  // Where Prometheus scrapes this node; 0 picks a free port (tests), logged at start.
  SLB_METRICS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 9100 }),
  ...NodeEnvProperties,
});

export type L4Config = Static<typeof Env> & { configPath: string | undefined };
export type ConfigResult = NodeConfigResult<Static<typeof Env>>;

/** Parses argv (`--config <file>`) and the environment; a bad value is one line, never a stack. */
export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ConfigResult {
  return parseNodeConfig(Env, argv, env, 'snapshot.json');
}
