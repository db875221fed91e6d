import { lookup } from 'node:dns/promises';
import { startMetricsServer } from '@slb/metrics-kit';
import { splitApiUrls } from '@slb/model';
import { pino } from 'pino';
import { HealthWorker } from './app.js';
import { backendDenyList, parseConfig } from './config.js';
import { healthNames } from './namespace-source.js';
import { ownEndpointDeny, redisHostName } from './own-endpoints.js';

const parsed = parseConfig(process.env);
if (!parsed.ok) {
  process.stderr.write(`health-worker: ${parsed.reason}\n`);
  process.exit(2);
}
const config = parsed.config;
const logger = pino({ level: config.LOG_LEVEL, base: { app: 'health-worker', pid: process.pid } });
// The Redis host, when a name, is resolved once: its addresses are never probed.
const resolved = new Map<string, string[]>();
const redisName = redisHostName(config.REDIS_URL);
if (redisName !== null) {
  const found = await lookup(redisName, { all: true }).catch(() => []);
  resolved.set(
    redisName,
    found.map((a) => a.address),
  );
}
// Until the names are known nothing is open: a stop while waiting for the API just exits.
const waiting = new AbortController();
const stopWaiting = () => {
  waiting.abort();
  process.exit(0);
};
process.once('SIGTERM', stopWaiting);
process.once('SIGINT', stopWaiting);
const names = await healthNames({
  apiUrls: splitApiUrls(config.SLB_API_URL),
  queue: config.SLB_HEALTH_QUEUE,
  keyPrefix: config.SLB_HEALTH_KEY_PREFIX,
  signal: waiting.signal,
  logger,
});
process.off('SIGTERM', stopWaiting);
process.off('SIGINT', stopWaiting);
const worker = new HealthWorker({
  backendDeny: [...ownEndpointDeny(config.REDIS_URL, resolved), ...backendDenyList(config)],
  redisUrl: config.REDIS_URL,
  queue: names.queue,
  keyPrefix: names.keyPrefix,
  concurrency: config.SLB_HEALTH_CONCURRENCY,
  logger,
});
const metrics = await startMetricsServer(worker.metrics.registry, config.SLB_METRICS_HOST, config.SLB_METRICS_PORT);
worker.addBackendDeny(
  ownEndpointDeny(config.REDIS_URL, resolved, { host: config.SLB_METRICS_HOST, port: metrics.address.port }),
);
await worker.start();
logger.info(
  {
    queue: names.queue,
    keyPrefix: names.keyPrefix,
    clusterId: names.clusterId,
    concurrency: config.SLB_HEALTH_CONCURRENCY,
    metricsHost: metrics.address.address,
    metricsPort: metrics.address.port,
  },
  'health worker ready',
);

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'shutting down');
  // A hung Redis must not keep the process up forever; the orchestrator's kill would come anyway.
  const deadline = setTimeout(() => {
    logger.warn('shutdown took too long, exiting');
    process.exit(1);
  }, 10_000);
  deadline.unref();
  await worker.close();
  metrics.server.close();
  logger.info('stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
