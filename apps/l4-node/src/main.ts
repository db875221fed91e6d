import { hostname } from 'node:os';
import { startMetricsServer } from '@slb/metrics-kit';
import { NodeSnapshot, splitApiUrls } from '@slb/model';
import {
  type ChannelSource,
  ControlChannelClient,
  type FileSource,
  LoadSampler,
  type ReloadResult,
  reportRuntime,
  runNode,
  sessionSyncFromEnv,
  TrafficReporter,
} from '@slb/node-runtime';
import { pino } from 'pino';
import { L4Node } from './app.js';
import { parseConfig } from './config.js';
import { fdBudgetFor } from './fd-budget.js';
import { L4Metrics } from './metrics.js';
import { openFileLimit } from './open-file-limit.js';
import { loadSnapshotFile } from './snapshot-loader.js';

const parsed = parseConfig(process.argv.slice(2), process.env);
if (!parsed.ok) {
  process.stderr.write(`l4-node: ${parsed.reason}\n`);
  process.exit(2);
}
const config = parsed.config;
const logger = pino({ level: config.LOG_LEVEL, base: { app: 'l4-node', pid: process.pid } });
const nodeId = config.SLB_NODE_ID ?? hostname();
const metricsRegistry = new L4Metrics();
// Before any listener: what this runtime lacks (SO_REUSEPORT on Node 20) is logged and exported first.
const runtime = await reportRuntime(metricsRegistry.registry, logger);
// The operator may keep a node that could share VIPs to active-standby (a host where peers must not share).
const reusePort = runtime.reusePort && config.SLB_REUSE_PORT !== 'off';
logger.info({ reusePort }, `VIPs carried ${reusePort ? 'active-active (SO_REUSEPORT)' : 'active-standby'}`);
const sync = sessionSyncFromEnv(config, nodeId, logger, metricsRegistry.registry);
const fileLimit = openFileLimit();
const maxOpenFiles = fileLimit === undefined ? Number.POSITIVE_INFINITY : fdBudgetFor(fileLimit);
logger.info(
  { openFileLimit: fileLimit ?? null, forwardingFdBudget: Number.isFinite(maxOpenFiles) ? maxOpenFiles : null },
  'descriptor budget',
);
const node = new L4Node({
  logger,
  metrics: metricsRegistry,
  sync,
  limits: {
    maxConnectionsPerClient: config.SLB_MAX_CONNECTIONS_PER_CLIENT,
    maxOpenFiles,
    tenantShare: config.SLB_TENANT_FD_SHARE,
  },
  // Listeners bind VIPs shared with peer nodes; upstream connections go out from the node's own address.
  // In file mode only when set: the 127.0.0.1 default is the local cloud's, and real backends are not
  // reachable from loopback. A control-channel node's address is its credential's (identified below).
  sourceAddress: config.configPath === undefined || process.env.SLB_NODE_ADDRESS ? config.SLB_NODE_ADDRESS : undefined,
  reusePort,
});

const metrics = await startMetricsServer(node.metrics.registry, config.SLB_METRICS_HOST, config.SLB_METRICS_PORT);
logger.info({ metricsPort: metrics.address.port, metricsHost: metrics.address.address }, 'metrics listening');

await runNode({
  name: 'l4-node',
  logger,
  source: config.configPath === undefined ? channelSource() : fileSource(config.configPath),
  // First signal: stop accepting and let established connections finish within their listener's drain
  // timeout (what an operator removing a node from service expects), which bounds it.
  drain: async () => {
    await node.shutdown();
    await sync?.close();
    metrics.server.close();
  },
  cut: async () => {
    await node.close();
    await sync?.close();
  },
});

/** Counts a config in the reload metric, labelled as the L7 node labels it. */
function reloaded(result: ReloadResult): void {
  node.metrics.reloads.inc({ result });
}

function fileSource(path: string): FileSource<NodeSnapshot> {
  return {
    kind: 'file',
    path,
    pollMs: config.SLB_CONFIG_POLL_MS,
    load: loadSnapshotFile,
    apply: (snapshot) => {
      reloaded('applied');
      return node.apply(snapshot);
    },
    refused: () => reloaded('rejected'),
  };
}

function channelSource(): ChannelSource {
  const load = new LoadSampler(node.metrics.registry, {
    active: 'slb_l4_connections_active',
    connections: 'slb_l4_connections_total',
  });
  const traffic = new TrafficReporter(() => node.metrics.traffic.reports());
  const channel = new ControlChannelClient<NodeSnapshot>({
    apiUrls: splitApiUrls(config.SLB_API_URL),
    joinToken: config.SLB_NODE_JOIN_TOKEN,
    token: config.SLB_NODE_TOKEN,
    nodeId,
    kind: 'l4',
    address: config.SLB_NODE_ADDRESS,
    capacity: config.SLB_NODE_CAPACITY,
    stateDir: config.SLB_STATE_DIR ?? `./data/node-${nodeId}`,
    schema: NodeSnapshot,
    apply: async (snapshot, change) => {
      reloaded('applied');
      return node.apply(snapshot, change);
    },
    load: () => load.current,
    traffic: () => traffic.report(),
    currentFailures: () => node.currentFailures(),
    boundVips: () => node.boundVips(),
    reusePort,
    identified: (address) => {
      node.useSourceAddress(address);
      logger.info({ sourceAddress: address }, 'upstream connections leave from the node address');
    },
    registry: node.metrics.registry,
    logger,
  });
  return { kind: 'channel', start: () => channel.start(), close: () => channel.close() };
}
