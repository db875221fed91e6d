import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { apiUrlsProblem, parseDenyRule, urlProblem } from '@slb/model';

const Env = Type.Object({
  // The Redis that carries the BullMQ queue, the target states and the transition stream.
  REDIS_URL: Type.String({ pattern: '^rediss?://', default: 'redis://127.0.0.1:6379' }),
  // Where the deployment's API answers, or its replicas (comma-separated, asked in order): unless both names
  // below are set, the worker asks it for the deployment's namespace (GET /control/v1/namespace), so it joins
  // its own deployment's queue and stream.
  SLB_API_URL: Type.String({ pattern: '^https?://', default: 'http://127.0.0.1:8080' }),
  // Overrides of the names the API derives from its cluster id; when set they must match the API's.
  SLB_HEALTH_QUEUE: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^[^:\\s]+$' })),
  SLB_HEALTH_KEY_PREFIX: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^\\S+$' })),
  // Checks in flight per process; probes wait on sockets, not CPU, so this is high.
  SLB_HEALTH_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 5000, default: 200 }),
  // Where Prometheus scrapes this worker; 0 picks a free port (tests), logged at start.
  SLB_METRICS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 9110 }),
  // Metrics are operational data: loopback unless the operator opens it up.
  SLB_METRICS_HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  // Extra targets never probed (comma-separated ADDRESS, CIDR, ADDRESS:PORT, [IPv6]:PORT): the cloud's
  // endpoints besides this worker's own Redis and metrics port, which it denies by itself.
  SLB_BACKEND_DENY: Type.String({ maxLength: 100_000, default: '' }),
  // pino level.
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
});

export type WorkerConfig = Static<typeof Env>;
export type ConfigResult = { ok: true; config: WorkerConfig } | { ok: false; reason: string };

/**
 * Parses the environment once; a bad value is one line naming the variable and why, never a stack and
 * never the value (REDIS_URL and SLB_API_URL can carry passwords).
 */
export function parseConfig(env: NodeJS.ProcessEnv): ConfigResult {
  const raw: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(Env.properties)) {
    const v = env[key];
    if (v === undefined || v === '') continue;
    raw[key] = schema.type === 'integer' && /^-?\d+$/.test(v) ? Number(v) : v;
  }
  const withDefaults = Value.Default(Env, raw);
  if (!Value.Check(Env, withDefaults)) {
    const e = Value.Errors(Env, withDefaults).First();
    return { ok: false, reason: `invalid environment ${e?.path.slice(1) ?? ''}: ${e?.message ?? 'bad value'}` };
  }
  const config = withDefaults as WorkerConfig;
  const urls = [
    ['REDIS_URL', urlProblem(config.REDIS_URL, ['redis:', 'rediss:'])],
    ['SLB_API_URL', apiUrlsProblem(config.SLB_API_URL)],
  ] as const;
  for (const [name, problem] of urls) {
    if (problem !== null) return { ok: false, reason: `invalid environment ${name}: ${problem}` };
  }
  const bad = backendDenyList(config).findIndex((entry) => parseDenyRule(entry) === null);
  if (bad !== -1) {
    return {
      ok: false,
      reason: `invalid environment SLB_BACKEND_DENY: entry ${bad + 1} is not an address, CIDR or address:port`,
    };
  }
  return { ok: true, config };
}

export function backendDenyList(config: WorkerConfig): string[] {
  return config.SLB_BACKEND_DENY.split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}
