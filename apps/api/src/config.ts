import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

const Env = Type.Object({
  /** Interface to listen on; loopback by default so a dev machine does not expose the API. */
  HOST: Type.String({ default: '127.0.0.1' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  /** The control plane's database; WAL files sit beside it. */
  SLB_DB_PATH: Type.String({ minLength: 1, default: './data/slb.db' }),
  /** Readiness checks Redis: the health fleet and session sync depend on it. */
  REDIS_URL: Type.String({ pattern: '^rediss?://', default: 'redis://127.0.0.1:6379' }),
  /** Bootstrap admin token; when unset one is generated and printed once on first start. */
  SLB_ADMIN_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  /**
   * The shared node token of fleets from before enrollment: accepted only with SLB_LEGACY_NODE_TOKEN=1, while
   * migrating (each node that joins with it is enrolled and sent its own credential).
   */
  SLB_NODE_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  SLB_LEGACY_NODE_TOKEN: Type.Union([Type.Literal('0'), Type.Literal('1')], { default: '0' }),
  /** AES-256-GCM keys for secrets at rest (see secret-keys.ts); the first encrypts, all decrypt. */
  SLB_SECRET_KEY: Type.Optional(Type.String({ minLength: 1 })),
  SLB_SECRET_KEY_FILE: Type.Optional(Type.String({ minLength: 1 })),
  /** DNS responder for `<lbId>.<zone>` (UDP and TCP on the same port); 0 picks a free one. */
  SLB_DNS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8053 }),
  SLB_DNS_ZONE: Type.String({
    pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$',
    default: 'slb.internal',
  }),
  /** BullMQ queue health checks are scheduled on, and the key prefix of the fleet's state (as the workers'). */
  SLB_HEALTH_QUEUE: Type.String({ minLength: 1, maxLength: 100, default: 'slb-health' }),
  SLB_HEALTH_KEY_PREFIX: Type.String({ minLength: 1, maxLength: 100, default: 'slb:health' }),
  /** Per-token request rate (and burst) before 429 with Retry-After; 0 turns limiting off. */
  SLB_RATE_LIMIT_RPS: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 200 }),
  SLB_RATE_LIMIT_BURST: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 400 }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
});
export type Config = Static<typeof Env>;

/** Parses the environment once; a bad value is a one-line reason naming the variable (never its value). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(Env.properties)) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  const withDefaults = Value.Default(Env, Value.Convert(Env, raw));
  const firstError = Value.Errors(Env, withDefaults).First();
  if (firstError) {
    throw new Error(`invalid environment: ${firstError.path.slice(1) || 'value'} ${firstError.message}`);
  }
  const config = withDefaults as Config;
  if (config.SLB_NODE_TOKEN !== undefined && config.SLB_LEGACY_NODE_TOKEN !== '1') {
    throw new Error(
      'invalid environment: SLB_NODE_TOKEN is the legacy shared node token; nodes now enroll with a join token ' +
        '(POST /v1/nodes). Unset it, or set SLB_LEGACY_NODE_TOKEN=1 to accept it while migrating',
    );
  }
  return config;
}
