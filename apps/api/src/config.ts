import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import {
  DEFAULT_BACKEND_NETWORKS,
  parseDenyRule,
  parseNetwork,
  parseQuotaDefaults,
  type QuotaLimits,
  urlProblem,
} from '@slb/model';
import { cidrProblem } from './domain/cidr.js';
import { LEASE_TTL_DEFAULT_MS } from './lease/timing.js';
import { DEFAULT_ADDRESS_POOLS } from './services/address-pools.js';
import { DEFAULT_VIP_HOLD_SECONDS } from './services/vip-allocator.js';

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
  /** Read by main.ts before this (startup/drizzle-imports.ts); listed so a misspelt value stops the start. */
  SLB_DRIZZLE_IMPORTS: Type.Union([Type.Literal('shortcut'), Type.Literal('node')], { default: 'shortcut' }),
  /** AES-256-GCM keys for secrets at rest (see secret-keys.ts); the first encrypts, all decrypt. */
  SLB_SECRET_KEY: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * PostgreSQL (`postgres://…`) in place of the SQLite file at SLB_DB_PATH: several API replicas can share it.
   * Never logged (it may carry a password).
   */
  SLB_DATABASE_URL: Type.Optional(Type.String({ minLength: 1 })),
  SLB_SECRET_KEY_FILE: Type.Optional(Type.String({ minLength: 1 })),
  /** DNS responder for `<lbId>.<zone>` (UDP and TCP on the same port); 0 picks a free one. */
  SLB_DNS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8053 }),
  SLB_DNS_ZONE: Type.String({
    pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$',
    default: 'slb.internal',
  }),
  /**
   * Overrides of the deployment's Redis names, which are otherwise derived from its cluster id (made at the
   * first start and kept in the database), so deployments sharing a Redis never collide: the BullMQ queue
   * health checks are scheduled on, the prefix of the fleet's keys and transition stream, and the nodes'
   * session-sync prefix. The workers and nodes learn them from the API.
   */
  SLB_HEALTH_QUEUE: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^[^:\\s]+$' })),
  SLB_HEALTH_KEY_PREFIX: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^\\S+$' })),
  SLB_SESSION_SYNC_PREFIX: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^\\S+$' })),
  /** Prefix of the listeners' traffic metrics buckets; default `<cluster id>:metrics` (the API alone uses them). */
  SLB_METRICS_KEY_PREFIX: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^\\S+$' })),
  /** Per-token request rate (and burst) before 429 with Retry-After; 0 turns limiting off. */
  SLB_RATE_LIMIT_RPS: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 200 }),
  SLB_RATE_LIMIT_BURST: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 400 }),
  /** Seconds a client has to send a request's headers, and the whole request: slow clients cannot pin sockets. */
  SLB_HTTP_HEADERS_TIMEOUT: Type.Integer({ minimum: 1, maximum: 300, default: 10 }),
  SLB_HTTP_REQUEST_TIMEOUT: Type.Integer({ minimum: 1, maximum: 3600, default: 30 }),
  /** Open connections (nodes' control channels included) beyond which new ones are dropped; bounds fds and memory. */
  SLB_HTTP_MAX_CONNECTIONS: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1000 }),
  /** Each client address's share of them, so one client cannot lock the others (and the nodes) out. */
  SLB_HTTP_MAX_CONNECTIONS_PER_ADDRESS: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 256 }),

  /**
   * Networks (comma-separated CIDRs) backends of a tenant without its own list may be in; the local cloud
   * adds 127.0.0.0/8. An admin sets a tenant's own with PUT /v1/tenants/{id}/backend-networks.
   */
  SLB_DEFAULT_BACKEND_NETWORKS: Type.String({ maxLength: 10_000, default: DEFAULT_BACKEND_NETWORKS.join(',') }),
  /**
   * Extra backend deny entries (comma-separated ADDRESS, CIDR, ADDRESS:PORT or [IPv6]:PORT): the cloud's
   * endpoints the API cannot see from its own settings (PostgreSQL, workers' metrics, the host's addresses).
   */
  SLB_BACKEND_DENY: Type.String({ maxLength: 100_000, default: '' }),

  /**
   * VIP pools (comma-separated CIDRs, IPv4 or IPv6) created at start when the database has none; later
   * changes go through /v1/address-pools. Default: the local cloud's loopback pool, apart from the node
   * addresses (127.0.0.x); set but empty: no pool.
   */
  SLB_ADDRESS_POOLS: Type.String({ maxLength: 10_000, default: DEFAULT_ADDRESS_POOLS.join(',') }),
  /** Seconds a deleted load balancer's VIP is kept from other tenants: clients and DNS caches still use it. */
  SLB_VIP_HOLD_SECONDS: Type.Integer({ minimum: 0, maximum: 30 * 86400, default: DEFAULT_VIP_HOLD_SECONDS }),

  /**
   * Time to live of the lease the once-only duties (health-check schedule, transitions, event pruning) run
   * under, ms: when its holder dies another API process takes them over within about this; renewed every third.
   */
  SLB_LEASE_TTL_MS: Type.Integer({ minimum: 1000, maximum: 60_000, default: LEASE_TTL_DEFAULT_MS }),

  /** Echoed as the `slb-instance` header of /healthz: a supervisor checks that the API answering is the one it started. */
  SLB_INSTANCE_ID: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),

  /** Per-tenant quota defaults for the whole deployment, `name=limit,…` over the built-in ones (README). */
  SLB_QUOTA_DEFAULTS: Type.String({ maxLength: 2000, default: '' }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
});
export type Config = Static<typeof Env> & { quotaDefaults: QuotaLimits; addressPools: string[] };

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
  const redisProblem = urlProblem((withDefaults as Static<typeof Env>).REDIS_URL, ['redis:', 'rediss:']);
  if (redisProblem !== null) throw new Error(`invalid environment: REDIS_URL ${redisProblem}`);
  const quotas = parseQuotaDefaults((withDefaults as Static<typeof Env>).SLB_QUOTA_DEFAULTS);
  if (!quotas.ok) throw new Error(`invalid environment: SLB_QUOTA_DEFAULTS ${quotas.reason}`);
  const parsed = withDefaults as Static<typeof Env>;
  // Set but empty is a choice (no pool), unlike the other variables, where empty means unset.
  const pools = env.SLB_ADDRESS_POOLS === '' ? [] : listOf(parsed.SLB_ADDRESS_POOLS);
  pools.forEach((entry, i) => {
    if (cidrProblem(entry) !== null) {
      throw new Error(`invalid environment: SLB_ADDRESS_POOLS entry ${i + 1} is not a CIDR with no host bits set`);
    }
  });
  if (parsed.SLB_DATABASE_URL !== undefined) {
    const problem = urlProblem(parsed.SLB_DATABASE_URL, ['postgres:', 'postgresql:']);
    if (problem !== null) throw new Error(`invalid environment: SLB_DATABASE_URL ${problem}`);
    // Replicas seal and open certificates' keys with the same key: a file each beside SLB_DB_PATH would differ.
    if (parsed.SLB_SECRET_KEY === undefined && parsed.SLB_SECRET_KEY_FILE === undefined) {
      throw new Error(
        'invalid environment: SLB_DATABASE_URL needs SLB_SECRET_KEY or SLB_SECRET_KEY_FILE, the same for every API ' +
          'replica (they open each other’s sealed private keys)',
      );
    }
  }
  const config: Config = { ...parsed, quotaDefaults: quotas.limits, addressPools: pools };
  if (config.SLB_NODE_TOKEN !== undefined && config.SLB_LEGACY_NODE_TOKEN !== '1') {
    throw new Error(
      'invalid environment: SLB_NODE_TOKEN is the legacy shared node token; nodes now enroll with a join token ' +
        '(POST /v1/nodes). Unset it, or set SLB_LEGACY_NODE_TOKEN=1 to accept it while migrating',
    );
  }
  listOf(config.SLB_DEFAULT_BACKEND_NETWORKS).forEach((entry, i) => {
    if (parseNetwork(entry) === null)
      throw new Error(`invalid environment: SLB_DEFAULT_BACKEND_NETWORKS entry ${i + 1} is not a CIDR`);
  });
  listOf(config.SLB_BACKEND_DENY).forEach((entry, i) => {
    if (parseDenyRule(entry) === null) {
      throw new Error(`invalid environment: SLB_BACKEND_DENY entry ${i + 1} is not an address, CIDR or address:port`);
    }
  });
  return config;
}

/** A comma-separated list with blanks dropped. */
export function listOf(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}
