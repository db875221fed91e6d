import { lookup } from 'node:dns/promises';
import closeWithGrace from 'close-with-grace';
import pino from 'pino';
import { buildApp } from './app.js';
import { listOf, loadConfig } from './config.js';
import { cloudEndpointDeny, endpointHostNames } from './domain/cloud-endpoints.js';
import { loadSecretKeys } from './secrets/key-source.js';

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (err) {
  process.stderr.write(`slb-api: ${(err as Error).message}\n`);
  process.exit(2);
}

const logger = pino({
  level: config.LOG_LEVEL,
  name: 'slb-api',
  redact: { paths: ['req.headers.authorization', '*.token', '*.privateKey', '*.secret'], censor: '[redacted]' },
});

/** The Redis host, when it is a name: resolved once at start, so its addresses are denied as backends. */
async function resolveEndpointHosts(): Promise<Map<string, string[]>> {
  const resolved = new Map<string, string[]>();
  for (const name of endpointHostNames({ redisUrl: config.REDIS_URL, databaseUrl: config.SLB_DATABASE_URL })) {
    const addresses = await lookup(name, { all: true }).catch(() => []);
    if (addresses.length === 0)
      logger.warn({ host: name }, 'cannot resolve a cloud endpoint; list it in SLB_BACKEND_DENY');
    resolved.set(
      name,
      addresses.map((a) => a.address),
    );
  }
  return resolved;
}

if (config.SLB_NODE_TOKEN !== undefined) {
  logger.warn(
    'SLB_LEGACY_NODE_TOKEN=1: nodes may join with the shared SLB_NODE_TOKEN (each is enrolled on joining); ' +
      'remove it once every node holds its own credential',
  );
}

try {
  const secrets = loadSecretKeys({
    SLB_SECRET_KEY: config.SLB_SECRET_KEY,
    SLB_SECRET_KEY_FILE: config.SLB_SECRET_KEY_FILE,
    dbPath: config.SLB_DB_PATH,
  });
  if (secrets.created) logger.warn({ file: secrets.created }, 'secret key created: back it up apart from the database');
  const deny = cloudEndpointDeny({
    host: config.HOST,
    port: config.PORT,
    dnsPort: config.SLB_DNS_PORT,
    redisUrl: config.REDIS_URL,
    databaseUrl: config.SLB_DATABASE_URL,
    resolved: await resolveEndpointHosts(),
  });
  const app = await buildApp({
    secretKeys: secrets.keys,
    backendPolicy: {
      defaultNetworks: listOf(config.SLB_DEFAULT_BACKEND_NETWORKS),
      deny: [...deny, ...listOf(config.SLB_BACKEND_DENY)],
    },
    dbPath: config.SLB_DB_PATH,
    databaseUrl: config.SLB_DATABASE_URL,
    instanceId: config.SLB_INSTANCE_ID,
    // An API holds its SQLite file alone: a lease still in Redis at start is a killed predecessor's. Replicas
    // on PostgreSQL share the duties: a lease held is another replica's, until it lapses.
    lease: { ttlMs: config.SLB_LEASE_TTL_MS, takeOver: config.SLB_DATABASE_URL === undefined },
    redisUrl: config.REDIS_URL,
    adminToken: config.SLB_ADMIN_TOKEN,
    nodeToken: config.SLB_NODE_TOKEN,
    rateLimit: { rps: config.SLB_RATE_LIMIT_RPS, burst: config.SLB_RATE_LIMIT_BURST },
    dnsZone: config.SLB_DNS_ZONE,
    dns: { host: config.HOST, port: config.SLB_DNS_PORT },
    quotaDefaults: config.quotaDefaults,
    addressPools: config.addressPools,
    vipHoldSeconds: config.SLB_VIP_HOLD_SECONDS,
    namespaceOverrides: {
      healthQueue: config.SLB_HEALTH_QUEUE,
      healthKeyPrefix: config.SLB_HEALTH_KEY_PREFIX,
      sessionSyncPrefix: config.SLB_SESSION_SYNC_PREFIX,
    },
    metricsKeyPrefix: config.SLB_METRICS_KEY_PREFIX,
    logger,
    httpLimits: {
      headersTimeoutMs: config.SLB_HTTP_HEADERS_TIMEOUT * 1000,
      requestTimeoutMs: config.SLB_HTTP_REQUEST_TIMEOUT * 1000,
      maxConnections: config.SLB_HTTP_MAX_CONNECTIONS,
      maxConnectionsPerAddress: config.SLB_HTTP_MAX_CONNECTIONS_PER_ADDRESS,
    },
    // Shown once, on the first start of a new database, and never logged.
    onAdminTokenGenerated: (token) => process.stdout.write(`\nGenerated admin token (shown once): ${token}\n\n`),
  });
  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'shutting down after an error');
    else logger.info({ signal }, 'shutting down');
    await app.close();
  });
  await app.listen({ host: config.HOST, port: config.PORT });
} catch (err) {
  logger.fatal({ err: { message: (err as Error).message, name: (err as Error).name } }, 'cannot start');
  process.stderr.write(`slb-api: cannot start: ${(err as Error).message}\n`);
  process.exit(1);
}
