// The local cloud for the chaos runner: the services of scripts/topology.mjs (the same definition as
// `npm run local-cloud` and docker-compose) on a redis-server of its own, each a child process the runner
// can kill -9 and start again by name. Every child's output goes to a log file; stopAll() ends them all.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, mkdirSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { enrollNodes } from '../../scripts/enroll-nodes.mjs';
import { createScratchDatabase, pgAnswers } from '../../scripts/pg-scratch.mjs';
import { localCloudServices } from '../../scripts/topology.mjs';
import { stablePort, until } from './util.mjs';

/** Every child process of the runner, so an exit on any path still ends them. */
const children = new Set();
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** Starts `command` with its output appended to `logFile`; the handle is registered for cleanup. */
export function startChild(command, args, { env = {}, logFile, ipc = false }) {
  const child = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe', ...(ipc ? ['ipc'] : [])],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  if (logFile) {
    const log = createWriteStream(logFile, { flags: 'a' });
    log.write(`---- ${new Date().toISOString()} start pid ${child.pid}\n`);
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    child.once('exit', (code, signal) => {
      log.end(`---- ${new Date().toISOString()} exit ${signal ?? code}\n`);
    });
  } else {
    child.stdout.resume();
    child.stderr.resume();
  }
  return child;
}

/** Ends a child: `signal` (SIGKILL = kill -9), then SIGKILL if it is still there after `graceMs`. */
export async function stopChild(child, signal = 'SIGTERM', graceMs = 5000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** What to undo once every child is gone (a PostgreSQL database of the run's own). */
const afterStop = [];

/** Ends every child; Redis last, so the services do not spend their shutdown waiting for it. */
export async function stopAllChildren() {
  const redis = [...children].filter((c) => c.spawnfile === 'redis-server');
  await Promise.all([...children].filter((c) => !redis.includes(c)).map((c) => stopChild(c, 'SIGTERM', 5000)));
  await Promise.all(redis.map((c) => stopChild(c, 'SIGTERM', 5000)));
  for (const undo of afterStop.splice(0)) await undo().catch(() => undefined);
}

/** Whether PostgreSQL answers (the --ha run needs it). */
export const pgReachable = pgAnswers;

/** A database of the run's own, dropped once the run's processes are gone. */
async function runDatabase() {
  const database = await createScratchDatabase('slb_chaos');
  afterStop.push(database.drop);
  return database.url;
}

const redisPing = (port) =>
  new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.setTimeout(500, () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      socket.destroy();
      resolve(d.toString().startsWith('+PONG'));
    });
    socket.on('error', () => resolve(false));
  });

/**
 * @param {{ root: string, outDir: string, l4: string[], l7: string[], addressPools: string[], ha?: boolean,
 *           pg?: { url: string } | null }} options
 *   addressPools: where the API takes the load balancers' VIPs from, apart from every other cloud's
 *   ha: two API replicas (api, api-2) on a PostgreSQL database of the run's own; the nodes, the workers and
 *   the runner's own calls move to the other when one is down
 *   pg: with `ha`, a PostgreSQL cluster of the run's own (pg-cluster.mjs) in place of a database on the
 *   machine's; the cloud hands it to the scenarios as `cloud.pg`
 */
export async function startCloud({ root, outDir, l4, l7, addressPools, ha = false, pg = null }) {
  const logs = join(outDir, 'logs');
  const dataDir = join(outDir, 'data');
  mkdirSync(logs, { recursive: true });
  mkdirSync(dataDir, { recursive: true });
  const id = `chaos-${randomUUID()}`;
  // Every port is one a restarted process can bind again (see stablePort).
  const redisPort = await stablePort();
  const apiPort = await stablePort();
  const dnsPort = await stablePort(['127.0.0.1'], { udp: true }); // the DNS responder binds UDP and TCP
  const metricsBase = await stablePort(['127.0.0.1'], { offsets: [1, 2, 11, 12, 21, 22] });
  const adminToken = `chaos-admin-${randomUUID()}`;
  const replica = ha
    ? { port: await stablePort(), dnsPort: await stablePort(['127.0.0.1'], { udp: true }) }
    : undefined;
  const databaseUrl = ha ? (pg?.url ?? (await runDatabase())) : undefined;
  const services = localCloudServices({
    root,
    dataDir,
    apiHost: '127.0.0.1',
    apiPort,
    dnsPort,
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    adminToken,
    l4Addresses: l4,
    l7Addresses: l7,
    addressPools,
    metricsPortBase: metricsBase,
    healthQueue: id,
    healthKeyPrefix: `${id}:health`,
    syncPrefix: `${id}:sync`,
    databaseUrl,
    replica,
  });
  const apiUrls = [apiPort, ...(replica ? [replica.port] : [])].map((port) => `http://127.0.0.1:${port}`);
  const byName = new Map(services.map((s) => [s.name, s]));
  const running = new Map();
  /** Join tokens of the nodes that must enroll (the first start); later starts use their saved credential. */
  let joinTokens = new Map();
  const isNode = (s) => s.kind === 'l4-node' || s.kind === 'l7-node';

  const cloud = {
    apiUrl: apiUrls[0],
    /** Every replica's URL (one unless `ha`), in the order calls try them. */
    apiUrls: [...apiUrls],
    /**
     * Calls go to replica `i` first. An LB's status and per-node convergence come from the replica its nodes
     * are connected to (the others see no channel of theirs): after a failover, that is the other one.
     */
    prefer(i) {
      cloud.apiUrls = [apiUrls[i], ...apiUrls.filter((_, j) => j !== i)];
    },
    adminToken,
    dnsPort,
    redisPort,
    pg,
    l4,
    l7,
    addressPools,
    services,
    /** Metrics port of a service (nodes and health workers). */
    metricsPort: (name) => Number(byName.get(name)?.env.SLB_METRICS_PORT),
    isRunning: (name) => {
      const c = running.get(name);
      return c !== undefined && c.exitCode === null && c.signalCode === null;
    },
    pidOf: (name) => running.get(name)?.pid,

    async startRedis() {
      const child = startChild(
        'redis-server',
        ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        { logFile: join(logs, 'redis.log') },
      );
      running.set('redis', child);
      await until(
        'redis-server answering PING',
        async () => ((await redisPing(redisPort)) ? true : undefined),
        10_000,
        50,
      );
    },

    start(name) {
      if (name === 'redis') return cloud.startRedis();
      const s = byName.get(name);
      if (!s) throw new Error(`no service ${name}`);
      const joinToken = joinTokens.get(name);
      const child = startChild(process.execPath, [...(s.args ?? []), s.script], {
        env: {
          ...s.env,
          LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'warn',
          ...(joinToken ? { SLB_NODE_JOIN_TOKEN: joinToken } : {}),
        },
        logFile: join(logs, `${name}.log`),
      });
      running.set(name, child);
      return Promise.resolve();
    },

    /** kill -9; resolves once the process is gone. */
    async kill(name) {
      const child = running.get(name);
      if (!child) throw new Error(`${name} is not running`);
      await stopChild(child, 'SIGKILL');
    },

    /** One call, to the first replica that answers at all (as a client given every replica's URL would). */
    async api(method, path, body, { headers = {}, timeoutMs = 5000 } = {}) {
      let res;
      for (const [i, url] of cloud.apiUrls.entries()) {
        try {
          res = await fetch(`${url}${path}`, {
            method,
            headers: {
              authorization: `Bearer ${adminToken}`,
              ...(body === undefined ? {} : { 'content-type': 'application/json' }),
              ...headers,
            },
            body: body === undefined ? undefined : JSON.stringify(body),
            signal: AbortSignal.timeout(timeoutMs),
          });
          break;
        } catch (err) {
          if (i === cloud.apiUrls.length - 1) throw err;
        }
      }
      const text = await res.text();
      let json = null;
      try {
        json = text ? JSON.parse(text) : null;
      } catch {
        json = text;
      }
      return { status: res.status, body: json, headers: res.headers };
    },

    /** The API's answer, or an error naming what failed. */
    async ok(method, path, body, options) {
      const r = await cloud.api(method, path, body, options);
      if (r.status < 200 || r.status > 299) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    },

    async apiReady(timeoutMs = 20_000, url = cloud.apiUrl) {
      await until(
        `the API ready (${url}/readyz)`,
        () => fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) }).then((r) => (r.ok ? true : undefined)),
        timeoutMs,
        100,
      );
    },

    /** Every forwarding node online in the API's view. */
    async nodesOnline(timeoutMs = 20_000) {
      // Nodes are registered under their service name; the API allocates their ids.
      const wanted = services.filter((s) => s.kind.endsWith('-node')).map((s) => s.name);
      await until(
        `nodes ${wanted.join(', ')} online`,
        async () => {
          const page = await cloud.ok('GET', '/v1/nodes?limit=500');
          const online = new Set(page.items.filter((n) => n.status === 'online').map((n) => n.name));
          return wanted.every((w) => online.has(w)) ? true : undefined;
        },
        timeoutMs,
        100,
      );
    },

    /** The L4 nodes' VIP mode as they reported it ('active-active' or 'active-standby'; one value if they agree). */
    async vipMode() {
      const page = await cloud.ok('GET', '/v1/nodes?limit=500');
      const modes = new Set(page.items.filter((n) => n.kind === 'l4').map((n) => n.vipMode ?? 'unknown'));
      return [...modes].sort().join('/');
    },

    async metrics(name) {
      const res = await fetch(`http://127.0.0.1:${cloud.metricsPort(name)}/metrics`, {
        signal: AbortSignal.timeout(2000),
      });
      return res.text();
    },

    async startAll() {
      await cloud.startRedis();
      // The first API migrates the database; a replica starts once it has.
      const apis = services.filter((s) => s.kind === 'api');
      for (const [i, s] of apis.entries()) {
        await cloud.start(s.name);
        await cloud.apiReady(30_000, apiUrls[i]);
      }
      for (const s of services.filter((s) => !isNode(s) && s.kind !== 'api')) await cloud.start(s.name);
      joinTokens = await enrollNodes({
        apiUrl: cloud.apiUrl,
        adminToken,
        nodes: services.filter(isNode).map((s) => ({
          name: s.name,
          kind: s.kind === 'l4-node' ? 'l4' : 'l7',
          address: s.address,
          stateDir: s.env.SLB_STATE_DIR,
        })),
      });
      for (const s of services.filter(isNode)) await cloud.start(s.name);
      await cloud.nodesOnline(30_000);
    },
  };
  return cloud;
}

/** A fresh backend host process (test/chaos/backend-host.mjs) with an IPC channel for its fault mode. */
export async function startBackendHost({ name, httpPort, tcpPort, logFile }) {
  const script = new URL('./backend-host.mjs', import.meta.url).pathname;
  const child = startChild(process.execPath, [script], {
    env: { CHAOS_NAME: name, CHAOS_HTTP_PORT: String(httpPort), CHAOS_TCP_PORT: String(tcpPort) },
    logFile,
    ipc: true,
  });
  let seq = 0;
  const pending = new Map();
  /** When the host closed its ports ({from, to}, ms): connections queued on them then were reset. */
  const downs = [];
  child.on('message', (m) => {
    if (m.event === 'down') downs.push({ from: m.from, to: m.to });
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.ok) p.resolve();
    else p.reject(new Error(`${name}: ${m.error}`));
  });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`backend ${name} did not start within 10 s`)), 10_000);
    child.on('message', (m) => {
      if (!m.ready) return;
      clearTimeout(timer);
      resolve();
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`backend ${name} exited (${signal ?? code}) while starting`));
    });
  });
  return {
    name,
    httpPort,
    tcpPort,
    child,
    downs,
    /** Switches the fault mode; resolves once the host applied it. */
    mode(mode) {
      const id = ++seq;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        child.send({ id, mode });
      });
    },
  };
}
