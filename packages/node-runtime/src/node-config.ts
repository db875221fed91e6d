import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { type Static, type TObject, type TProperties, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { apiUrlsProblem, urlProblem } from '@slb/model';
import { ChannelEnvProperties, channelModeProblem } from './channel-env.js';
import { CREDENTIAL_FILE } from './node-credential.js';

/** Environment both forwarding nodes read; each node spreads it into its own Env schema. */
export const NodeEnvProperties = {
  // Metrics are operational data: loopback unless the operator opens it up.
  SLB_METRICS_HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  // pino level.
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
  // How often the config file is polled for changes, ms (SIGHUP reloads at once); 0 turns polling off.
  SLB_CONFIG_POLL_MS: Type.Integer({ minimum: 0, maximum: 60_000, default: 500 }),
  ...ChannelEnvProperties,
  // Session sync between nodes; REDIS_URL is the fallback, 'off' disables it.
  SLB_SESSION_SYNC_REDIS_URL: Type.Optional(
    Type.String({ pattern: '^(rediss?://.+|off)$', description: "'off' disables sync" }),
  ),
  REDIS_URL: Type.String({ pattern: '^rediss?://', default: 'redis://127.0.0.1:6379' }),
  // Key prefix of the sync streams. Unset: the deployment's, from the API's snapshot (its cluster id), so
  // fleets of several deployments on one Redis stay apart without anyone choosing names; set: this one.
  SLB_SESSION_SYNC_PREFIX: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^\\S+$' })),
};

export type NodeConfigResult<T> =
  | { ok: true; config: T & { configPath: string | undefined } }
  | { ok: false; reason: string };

/** URL-valued variables of NodeEnvProperties and the schemes each takes. */
const URL_VARIABLES = [
  ['REDIS_URL', ['redis:', 'rediss:']],
  ['SLB_SESSION_SYNC_REDIS_URL', ['redis:', 'rediss:']],
] as const;

/**
 * Parses a node's argv (`--config <file>`) and environment against its Env schema; a bad value is one
 * line naming the variable and why, never a stack and never the value (URLs and tokens carry secrets). Numbers are converted only where the schema wants a number.
 */
export function parseNodeConfig<P extends TProperties>(
  schema: TObject<P>,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  snapshotFile: string,
): NodeConfigResult<Static<TObject<P>>> {
  const i = argv.indexOf('--config');
  const configPath = i >= 0 ? argv[i + 1] : undefined;
  if (i >= 0 && (configPath === undefined || configPath === '')) {
    return {
      ok: false,
      reason: `usage: main.js [--config <${snapshotFile}>] (without it, the node dials SLB_API_URL)`,
    };
  }
  const raw: Record<string, unknown> = {};
  for (const [key, property] of Object.entries(schema.properties)) {
    const v = env[key];
    if (v === undefined || v === '') continue;
    const numeric =
      (property as { type?: string }).type === 'integer' || (property as { type?: string }).type === 'number';
    raw[key] = numeric && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
  }
  const withDefaults = Value.Default(schema, raw) as Static<TObject<P>>;
  if (!Value.Check(schema, withDefaults)) {
    const e = Value.Errors(schema, withDefaults).First();
    return { ok: false, reason: `invalid environment ${e?.path.slice(1) ?? ''}: ${e?.message ?? 'bad value'}` };
  }
  for (const [name, protocols] of URL_VARIABLES) {
    const value = (withDefaults as Record<string, unknown>)[name];
    if (typeof value !== 'string' || value === 'off') continue;
    const problem = urlProblem(value, protocols);
    if (problem !== null) return { ok: false, reason: `invalid environment ${name}: ${problem}` };
  }
  const apiUrl = (withDefaults as Record<string, unknown>).SLB_API_URL;
  const apiUrls = typeof apiUrl === 'string' ? apiUrlsProblem(apiUrl) : null;
  if (apiUrls !== null) return { ok: false, reason: `invalid environment SLB_API_URL: ${apiUrls}` };
  const channelEnv = withDefaults as {
    SLB_NODE_TOKEN?: string;
    SLB_NODE_JOIN_TOKEN?: string;
    SLB_STATE_DIR?: string;
    SLB_NODE_ID?: string;
  };
  const stateDir = channelEnv.SLB_STATE_DIR ?? `./data/node-${channelEnv.SLB_NODE_ID ?? hostname()}`;
  const problem = channelModeProblem(configPath, channelEnv, existsSync(join(stateDir, CREDENTIAL_FILE)));
  if (problem) return { ok: false, reason: problem };
  return { ok: true, config: { ...withDefaults, configPath } };
}
