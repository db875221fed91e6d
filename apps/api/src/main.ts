import closeWithGrace from 'close-with-grace';
import pino from 'pino';
import { buildApp } from './app.js';
import { loadConfig } from './config.js';
import { DnsResponder } from './dns/responder.js';
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
  const app = await buildApp({
    secretKeys: secrets.keys,
    dbPath: config.SLB_DB_PATH,
    redisUrl: config.REDIS_URL,
    adminToken: config.SLB_ADMIN_TOKEN,
    nodeToken: config.SLB_NODE_TOKEN,
    rateLimit: { rps: config.SLB_RATE_LIMIT_RPS, burst: config.SLB_RATE_LIMIT_BURST },
    dnsZone: config.SLB_DNS_ZONE,
    health: { queue: config.SLB_HEALTH_QUEUE, keyPrefix: config.SLB_HEALTH_KEY_PREFIX },
    logger,
    // Shown once, on the first start of a new database, and never logged.
    onAdminTokenGenerated: (token) => process.stdout.write(`\nGenerated admin token (shown once): ${token}\n\n`),
  });
  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'shutting down after an error');
    else logger.info({ signal }, 'shutting down');
    await app.close();
  });
  const dns = new DnsResponder(config.SLB_DNS_ZONE, (lbId) => app.services.loadBalancers.addressesOf(lbId), logger);
  app.addHook('onClose', async () => dns.close());
  await app.listen({ host: config.HOST, port: config.PORT });
  const dnsPort = await dns.listen(config.HOST, config.SLB_DNS_PORT);
  logger.info({ dnsPort, zone: config.SLB_DNS_ZONE }, 'DNS responder listening');
} catch (err) {
  logger.fatal({ err: { message: (err as Error).message, name: (err as Error).name } }, 'cannot start');
  process.stderr.write(`slb-api: cannot start: ${(err as Error).message}\n`);
  process.exit(1);
}
