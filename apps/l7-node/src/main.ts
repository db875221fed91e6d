import cluster from 'node:cluster';
import { hostname } from 'node:os';
import { startMetricsServer } from '@slb/metrics-kit';
import {
  type L7NodeSnapshot,
  L7NodeSnapshot as L7NodeSnapshotSchema,
  type ListenerFailure,
  type ListenerTrafficReport,
  type NodeLoadReport,
  splitApiUrls,
} from '@slb/model';
import {
  type ChannelSource,
  ControlChannelClient,
  type FileSource,
  LoadSampler,
  type ReloadResult,
  reportRuntime,
  runNode,
  type SnapshotChange,
  sessionSyncFromEnv,
  TrafficReporter,
} from '@slb/node-runtime';
import { pino } from 'pino';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { createL7App } from './app.js';
import { parseConfig } from './config.js';
import { createMetrics } from './metrics.js';
import { loadSnapshotFile } from './snapshot-loader.js';
import { runWorker, WorkerFleet } from './workers.js';

// The process: reads config, applies the snapshot file (reloading it on SIGHUP and when it changes) or
// follows the control channel, serves metrics, and shuts down gracefully on SIGTERM/SIGINT. With
// SLB_L7_WORKERS > 1 this runs as a primary (channel, file, metrics port) and that many workers (listeners).

const parsed = parseConfig(process.argv.slice(2), process.env);
if (!parsed.ok) {
  process.stderr.write(`l7-node: ${parsed.reason}\n`);
  process.exit(2);
}
const config = parsed.config;
const nodeId = config.SLB_NODE_ID ?? hostname();
const role = config.SLB_L7_WORKERS === 1 ? 'node' : cluster.isPrimary ? 'primary' : 'worker';
const logger = pino({
  level: config.LOG_LEVEL,
  base: { app: 'l7-node', pid: process.pid, ...(role === 'node' ? {} : { role }) },
});
const LOAD_METRICS = {
  active: 'slb_l7_active_connections',
  connections: 'slb_l7_connections_total',
  requests: 'slb_l7_requests_total',
};

/** What serves, follows config and reports load: the app itself, or the worker fleet. */
interface Target {
  /** Resolves with the listeners it could not build (in a worker fleet: those any worker could not). */
  apply(snapshot: L7NodeSnapshot, change?: SnapshotChange): Promise<undefined | readonly ListenerFailure[]>;
  load(): NodeLoadReport;
  /** The traffic counters of the node's listeners now (for the heartbeat's summary). */
  traffic(): ListenerTrafficReport[];
  /** The listeners not served as sent now (binds being retried included): sent in every heartbeat. */
  currentFailures(): ListenerFailure[];
  close(): Promise<void>;
  reloads(result: ReloadResult): void;
  /** Where the channel's own metrics go; absent for a worker fleet's primary (it serves the workers' sum). */
  registry?: Registry;
}

if (role === 'worker') startWorker();
else {
  const target = role === 'primary' ? await startPrimary() : await startSingle();
  await follow(target);
}

/** One process serving everything (SLB_L7_WORKERS=1). */
async function startSingle(): Promise<Target> {
  const { app, sync } = serve();
  const load = new LoadSampler(app.metrics.registry, LOAD_METRICS);
  const metrics = await startMetrics(app.metrics.registry);
  return {
    registry: app.metrics.registry,
    apply: (snapshot) => app.apply(snapshot),
    load: () => load.current,
    traffic: () => app.trafficReports(),
    currentFailures: () => app.currentFailures(),
    reloads: (result) => app.metrics.reloads.labels(result).inc(),
    close: async () => {
      metrics.close();
      load.stop();
      await app.close();
      await sync?.close();
    },
  };
}

/** The primary of a worker fleet: every config goes to all workers; metrics are the workers' summed. */
async function startPrimary(): Promise<Target> {
  const fleet = new WorkerFleet(config.SLB_L7_WORKERS, logger);
  fleet.start();
  const aggregate = new AggregatorRegistry();
  const metrics = await startMetrics({ metrics: () => aggregate.clusterMetrics(), contentType: aggregate.contentType });
  await fleet.whenReady();
  logger.info({ workers: config.SLB_L7_WORKERS }, 'L7 workers ready');
  return {
    apply: (snapshot, change) => fleet.apply(snapshot, change),
    load: () => fleet.load(),
    traffic: () => fleet.traffic(),
    currentFailures: () => fleet.currentFailures(),
    // The workers count their own reloads; a refused file never reaches them.
    reloads: () => {},
    close: async () => {
      metrics.close();
      await fleet.stop(config.SLB_DRAIN_MS + 5000);
    },
  };
}

function startWorker(): void {
  const { app, sync } = serve();
  // Answers the primary's requests for this worker's metrics (the aggregate it serves).
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([app.metrics.registry]);
  const load = new LoadSampler(app.metrics.registry, LOAD_METRICS);
  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    const force = setTimeout(() => process.exit(1), config.SLB_DRAIN_MS + 5000);
    force.unref();
    load.stop();
    await app.close();
    await sync?.close();
    process.exit(0);
  };
  runWorker(
    {
      apply: (s) => app.apply(s),
      load: () => load.current,
      currentFailures: () => app.currentFailures(),
      trafficReports: () => app.trafficReports(),
    },
    logger,
    shutdown,
  );
  // A signal to the whole process group (Ctrl-C) reaches the workers too: each drains like the primary asks.
  process.on('SIGTERM', () => void shutdown());
  process.on('SIGINT', () => void shutdown());
}

/** The app that serves the listeners, with its session sync. */
function serve() {
  const metrics = createMetrics();
  // Each serving process binds the listeners, so each one reports what its runtime lacks.
  void reportRuntime(metrics.registry, logger);
  const sync = sessionSyncFromEnv(config, nodeId, logger, metrics.registry);
  const app = createL7App({
    logger,
    metrics,
    sync,
    drainMs: config.SLB_DRAIN_MS,
    listener: { proxyHeaderTimeoutMs: config.SLB_PROXY_HEADER_TIMEOUT_MS, fastPath: config.SLB_L7_FAST_PATH === '1' },
  });
  return { app, sync };
}

async function startMetrics(registry: Parameters<typeof startMetricsServer>[0]) {
  const { server, address } = await startMetricsServer(registry, config.SLB_METRICS_HOST, config.SLB_METRICS_PORT);
  logger.info({ metricsPort: address.port, metricsHost: address.address }, 'metrics listening');
  return server;
}

/** Serves the config file or follows the control channel, until SIGTERM/SIGINT. */
async function follow(target: Target): Promise<void> {
  await runNode({
    name: 'l7-node',
    logger,
    source: config.configPath === undefined ? channelSource(target) : fileSource(config.configPath, target),
    drain: () => target.close(),
    // A drain bounded by SLB_DRAIN_MS, with time to close the pools and the sync after it.
    forceExitMs: config.SLB_DRAIN_MS + 5000,
  });
}

function fileSource(path: string, target: Target): FileSource<L7NodeSnapshot> {
  return {
    kind: 'file',
    path,
    pollMs: config.SLB_CONFIG_POLL_MS,
    load: loadSnapshotFile,
    apply: (snapshot) => target.apply(snapshot),
    refused: () => target.reloads('rejected'),
  };
}

function channelSource(target: Target): ChannelSource {
  const traffic = new TrafficReporter(() => target.traffic());
  const channel = new ControlChannelClient<L7NodeSnapshot>({
    apiUrls: splitApiUrls(config.SLB_API_URL),
    joinToken: config.SLB_NODE_JOIN_TOKEN,
    token: config.SLB_NODE_TOKEN,
    nodeId,
    kind: 'l7',
    address: config.SLB_NODE_ADDRESS,
    capacity: config.SLB_NODE_CAPACITY,
    stateDir: config.SLB_STATE_DIR ?? `./data/node-${nodeId}`,
    schema: L7NodeSnapshotSchema,
    apply: (snapshot, change) => target.apply(snapshot, change),
    load: () => target.load(),
    traffic: () => traffic.report(),
    currentFailures: () => target.currentFailures(),
    registry: target.registry,
    logger,
  });
  return { kind: 'channel', start: () => channel.start(), close: () => channel.close() };
}
