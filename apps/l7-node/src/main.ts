import { unwatchFile, watchFile } from 'node:fs';
import { hostname } from 'node:os';
import { L7NodeSnapshot } from '@slb/model';
import { ControlChannelClient, SessionSync, startMetricsServer } from '@slb/node-runtime';
import { pino } from 'pino';
import { createL7App } from './app.js';
import { parseConfig } from './config.js';
import { createMetrics } from './metrics.js';
import { loadSnapshotFile } from './snapshot-loader.js';

// The process: reads config, applies the snapshot file, reloads it on SIGHUP and when it changes, serves
// metrics, and shuts down gracefully on SIGTERM/SIGINT.

const parsed = parseConfig(process.argv.slice(2), process.env);
if (!parsed.ok) {
  process.stderr.write(`l7-node: ${parsed.reason}\n`);
  process.exit(2);
}
const config = parsed.config;
const logger = pino({ level: config.LOG_LEVEL, base: { app: 'l7-node', pid: process.pid } });
const nodeId = config.SLB_NODE_ID ?? hostname();
const metrics = createMetrics();
const syncUrl = config.SLB_SESSION_SYNC_REDIS_URL ?? config.REDIS_URL;
// Redis is dialled only once a `server`-mode sticky listener is attached; without it, local tables only.
const sync =
  syncUrl === 'off'
    ? undefined
    : new SessionSync({
        url: syncUrl,
        prefix: config.SLB_SESSION_SYNC_PREFIX,
        nodeId,
        logger: logger.child({ component: 'session-sync' }),
        registry: metrics.registry,
      });
const app = createL7App({
  logger,
  metrics,
  sync,
  drainMs: config.SLB_DRAIN_MS,
  listener: { proxyHeaderTimeoutMs: config.SLB_PROXY_HEADER_TIMEOUT_MS, fastPath: config.SLB_L7_FAST_PATH === '1' },
});

const metricsServer = await startMetricsServer(app.metrics.registry, config.SLB_METRICS_HOST, config.SLB_METRICS_PORT);
logger.info({ port: metricsServer.address.port }, 'metrics listening');
process.stdout.write(`l7-node metrics on ${metricsServer.address.address}:${metricsServer.address.port}\n`);

let channel: ControlChannelClient<L7NodeSnapshot> | null = null;
if (config.configPath !== undefined) {
  await runFromFile(config.configPath);
} else {
  channel = new ControlChannelClient<L7NodeSnapshot>({
    apiUrl: config.SLB_API_URL,
    token: config.SLB_NODE_TOKEN!,
    nodeId,
    kind: 'l7',
    address: config.SLB_NODE_ADDRESS,
    capacity: config.SLB_NODE_CAPACITY,
    stateDir: config.SLB_STATE_DIR ?? `./data/node-${nodeId}`,
    schema: L7NodeSnapshot,
    apply: (snapshot) => app.apply(snapshot),
    load: () => ({ activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 }),
    logger,
  });
  await channel.start();
}

/** File mode: serve `--config`, reload it on SIGHUP and when it changes. */
async function runFromFile(configPath: string): Promise<void> {
  const first = await loadSnapshotFile(configPath);
  if (!first.ok) {
    process.stderr.write(`l7-node: refusing ${configPath}: ${first.reason}\n`);
    process.exit(1);
  }
  await app.apply(first.snapshot);
  logger.info({ version: first.snapshot.version, listeners: first.snapshot.listeners.length }, 'snapshot applied');

  let reloading = false;
  let again = false;
  async function reload(why: string): Promise<void> {
    if (reloading) {
      again = true;
      return;
    }
    reloading = true;
    try {
      const r = await loadSnapshotFile(configPath);
      if (!r.ok) {
        app.metrics.reloads.labels('refused').inc();
        logger.error({ why, reason: r.reason }, 'snapshot refused; keeping the last good config');
      } else {
        await app.apply(r.snapshot);
        logger.info({ why, version: r.snapshot.version }, 'snapshot applied');
      }
    } catch (err) {
      logger.error({ why, err: (err as Error).message }, 'reload failed; keeping the last good config');
    } finally {
      reloading = false;
      if (again) {
        again = false;
        void reload(why);
      }
    }
  }

  process.on('SIGHUP', () => void reload('SIGHUP'));
  if (config.SLB_CONFIG_POLL_MS > 0) {
    // Polling (stat) rather than fs.watch: it survives editors and tools that replace the file by rename.
    watchFile(configPath, { interval: config.SLB_CONFIG_POLL_MS }, (cur, prev) => {
      if (cur.mtimeMs !== prev.mtimeMs || cur.size !== prev.size) void reload('file changed');
    });
  }
}

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'shutting down');
  if (config.configPath !== undefined) unwatchFile(config.configPath);
  await channel?.close();
  const force = setTimeout(() => process.exit(1), config.SLB_DRAIN_MS + 5000);
  force.unref();
  metricsServer.server.close();
  await app.close();
  await sync?.close();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
