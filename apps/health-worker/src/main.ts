import { startMetricsServer } from '@slb/node-runtime';
import { pino } from 'pino';
import { HealthWorker } from './app.js';
import { parseConfig } from './config.js';

const parsed = parseConfig(process.env);
if (!parsed.ok) {
  process.stderr.write(`health-worker: ${parsed.reason}\n`);
  process.exit(2);
}
const config = parsed.config;
const logger = pino({ level: config.LOG_LEVEL, base: { app: 'health-worker', pid: process.pid } });
const worker = new HealthWorker({
  redisUrl: config.REDIS_URL,
  queue: config.SLB_HEALTH_QUEUE,
  keyPrefix: config.SLB_HEALTH_KEY_PREFIX,
  concurrency: config.SLB_HEALTH_CONCURRENCY,
  logger,
});
const metrics = await startMetricsServer(worker.metrics.registry, config.SLB_METRICS_HOST, config.SLB_METRICS_PORT);
await worker.start();
logger.info(
  {
    queue: config.SLB_HEALTH_QUEUE,
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
