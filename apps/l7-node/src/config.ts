import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { ChannelEnvProperties, channelModeProblem } from '@slb/node-runtime';

const Env = Type.Object({
  // Where Prometheus scrapes this node; 0 picks a free port (tests), logged at start.
  SLB_METRICS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 9101 }),
  // Metrics are operational data: loopback unless the operator opens it up.
  SLB_METRICS_HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  // pino level; the access log is at info.
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
  // How often the config file is polled for changes, ms (SIGHUP reloads at once); 0 turns polling off.
  SLB_CONFIG_POLL_MS: Type.Integer({ minimum: 0, maximum: 60_000, default: 500 }),
  // A connection on a PROXY port that has not sent its whole header by then is closed (slow-header bound).
  SLB_PROXY_HEADER_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60_000, default: 5000 }),
  // How long a removed listener's in-flight requests may finish after a reload or on shutdown.
  SLB_DRAIN_MS: Type.Integer({ minimum: 0, maximum: 600_000, default: 10_000 }),
  ...ChannelEnvProperties,
  // Session sync between L7 nodes (`server`-mode sticky cookies); REDIS_URL is the fallback.
  SLB_SESSION_SYNC_REDIS_URL: Type.Optional(
    Type.String({ pattern: '^(rediss?://.+|off)$', description: "'off' disables sync" }),
  ),
  REDIS_URL: Type.String({ pattern: '^rediss?://', default: 'redis://127.0.0.1:6379' }),
  // Key prefix of the sync streams, so tests (and several fleets on one Redis) stay apart.
  SLB_SESSION_SYNC_PREFIX: Type.String({ minLength: 1, maxLength: 100, default: 'slb:sync' }),
});

export type L7Config = Static<typeof Env> & { configPath: string | undefined };

export type ConfigResult = { ok: true; config: L7Config } | { ok: false; reason: string };

/** Parses argv (`--config <file>`) and the environment; a bad value is one line, never a stack. */
export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ConfigResult {
  const i = argv.indexOf('--config');
  const configPath = i >= 0 ? argv[i + 1] : undefined;
  if (i >= 0 && (configPath === undefined || configPath === '')) {
    return {
      ok: false,
      reason: 'usage: main.js [--config <l7-snapshot.json>] (without it, the node dials SLB_API_URL)',
    };
  }
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(Env.properties)) {
    const v = env[key];
    if (v === undefined || v === '') continue;
    raw[key] = /^-?\d+$/.test(v) ? Number(v) : v;
  }
  const withDefaults = Value.Default(Env, raw);
  if (!Value.Check(Env, withDefaults)) {
    const e = Value.Errors(Env, withDefaults).First();
    return { ok: false, reason: `invalid environment ${e?.path.slice(1) ?? ''}: ${e?.message ?? 'bad value'}` };
  }
  const problem = channelModeProblem(configPath, withDefaults);
  if (problem) return { ok: false, reason: problem };
  return { ok: true, config: { ...withDefaults, configPath } };
}
