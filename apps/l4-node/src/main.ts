import { watchFile } from 'node:fs';
import { hostname } from 'node:os';
import { startMetricsServer } from '@slb/metrics-kit';
import { NodeSnapshot } from '@slb/model';
import {
  ControlChannelClient,
  LoadSampler,
  reportRuntime,
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

let channel: ControlChannelClient<NodeSnapshot> | null = null;
if (config.configPath !== undefined) {
  await runFromFile(config.configPath);
} else {
  const load = new LoadSampler(node.metrics.registry, {
    active: 'slb_l4_connections_active',
    connections: 'slb_l4_connections_total',
  });
  const traffic = new TrafficReporter(() => node.metrics.traffic.reports());
  channel = new ControlChannelClient<NodeSnapshot>({
    apiUrl: config.SLB_API_URL,
    joinToken: config.SLB_NODE_JOIN_TOKEN,
    token: config.SLB_NODE_TOKEN,
    nodeId,
    kind: 'l4',
    address: config.SLB_NODE_ADDRESS,
    capacity: config.SLB_NODE_CAPACITY,
    stateDir: config.SLB_STATE_DIR ?? `./data/node-${nodeId}`,
    schema: NodeSnapshot,
    apply: async (snapshot, change) => {
      node.metrics.reloads.inc({ result: 'applied' });
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
    logger,
  });
  try {
    await channel.start();
  } catch (err) {
    // No credential, or a join token refused: nothing to retry, the operator has to act.
    logger.fatal({ reason: (err as Error).message }, 'cannot join the control plane');
    process.stderr.write(`l4-node: ${(err as Error).message}\n`);
    process.exit(2);
  }
}

/** A snapshot from the file applied, and said once (the control channel says it for its own). */
async function applyFile(snapshot: NodeSnapshot): Promise<void> {
  node.metrics.reloads.inc({ result: 'applied' });
  const failed = await node.apply(snapshot);
  logger.info({ version: snapshot.version, listeners: node.listeners.size, failed: failed.length }, 'config applied');
}

/** File mode: serve `--config`, reload it on SIGHUP and when it changes. */
async function runFromFile(configPath: string): Promise<void> {
  const first = await loadSnapshotFile(configPath);
  if (!first.ok) {
    logger.fatal({ path: configPath, reason: first.reason }, `config rejected: ${first.reason}`);
    process.stderr.write(`l4-node: config rejected: ${first.reason}\n`);
    process.exit(1);
  }
  await applyFile(first.snapshot);

  let lastText = '';
  /** Re-reads the file; a bad file is reported and the last good config keeps serving. */
  async function reload(trigger: string): Promise<void> {
    const r = await loadSnapshotFile(configPath);
    if (!r.ok) {
      node.metrics.reloads.inc({ result: 'rejected' });
      logger.warn(
        { trigger, reason: r.reason },
        `config rejected, keeping version ${node.current?.version}: ${r.reason}`,
      );
      return;
    }
    const text = JSON.stringify(r.snapshot);
    if (trigger === 'poll' && text === lastText) return;
    lastText = text;
    await applyFile(r.snapshot);
  }
  lastText = JSON.stringify(first.snapshot);

  process.on('SIGHUP', () => void reload('SIGHUP'));
  if (config.SLB_CONFIG_POLL_MS > 0) {
    // watchFile (stat polling) survives editors that replace the file by rename, unlike fs.watch.
    watchFile(configPath, { interval: config.SLB_CONFIG_POLL_MS, persistent: false }, (cur, prev) => {
      if (cur.mtimeMs !== prev.mtimeMs || cur.size !== prev.size) void reload('poll');
    });
  }
}

let stopping = false;
/**
 * First signal: stop accepting and let established connections finish within their drain timeout
 * (what an operator removing a node from service expects). A second signal cuts everything at once.
 */
async function shutdown(signal: string): Promise<void> {
  if (stopping) {
    logger.warn({ signal }, 'second signal: closing all connections now');
    await node.close();
    await sync?.close();
    process.exit(0);
  }
  stopping = true;
  logger.info({ signal }, 'shutting down');
  await channel?.close();
  await node.shutdown();
  await sync?.close();
  metrics.server.close();
  logger.info('stopped');
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
