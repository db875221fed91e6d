#!/usr/bin/env node
// One L4 node's full apply of a fleet-sized snapshot (issue #22), without the API: a stand-in controller
// sends the built node (apps/l4-node/dist) a one-listener snapshot, then, with traffic flowing through that
// listener, a snapshot of LISTENERS more listeners × BACKENDS servers. Says how long the apply took, the
// longest gap between the node's heartbeats and in its echo traffic while it ran, and the node's RSS.
//   npm run build && node bench/node-join.mjs          (LISTENERS=3000 BACKENDS=50: the L4 snapshot of LBS=300)
// Knobs: LISTENERS, BACKENDS, GROUP (listeners sharing their servers, as a server group's do: 5 is the shape of
// bench/scale.mjs; default 1, every listener its own), SETS (1, the default: the snapshot names each group's
// backends once, as the API sends it to a node that reads backend sets; 0: every listener spells them out), SYNC
// (1: session sync on, through REDIS_URL or the local Redis, under a prefix of this run's own that is deleted at the
// end; each listener then loads its peers' entries as it starts, as in bench/scale.mjs; default 0, off), IDLE_S
// (5: seconds the node's CPU at rest is measured over, after the apply), RESTART=1 (the node is then killed and
// started again on its saved file, twice: resumed with an empty delta, then sent the whole fleet again; how long
// each took, and the RSS and V8 heap after), ADDRESS
// (127.78.0.1, where the listeners bind), PORT_BASE (20000), PROF=1 (the node writes a CPU profile into ./prof),
// LOG_DIR (keep the node's log there), NODE_ARGS (the node's Node.js flags: bench/node-args.mjs).
import { spawn } from 'node:child_process';
import { appendFileSync, closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { bulkListener, largeL4Snapshot } from '@slb/test-support/large-snapshot';
import { deleteRedisKeys } from '@slb/test-support/redis-keys';
import { WebSocketServer } from 'ws';
import { nodeArgs } from './node-args.mjs';

const LISTENERS = Number(process.env.LISTENERS ?? 3000);
const BACKENDS = Number(process.env.BACKENDS ?? 50);
const GROUP = Number(process.env.GROUP ?? 1);
const SETS = process.env.SETS !== '0';
const SYNC = process.env.SYNC === '1';
const RESTART = process.env.RESTART === '1';
/** The stand-in controller's epoch (SnapshotEpoch). */
const EPOCH = 'b'.repeat(32);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const SYNC_PREFIX = `bench-node-join-${process.pid}:sync`;
const ADDRESS = process.env.ADDRESS ?? '127.78.0.1';
const PORT_BASE = Number(process.env.PORT_BASE ?? 20000);
const LOG_DIR = process.env.LOG_DIR;
const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'slb-node-join-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const IDLE_S = Number(process.env.IDLE_S ?? 5);
/** utime + stime of a process, seconds (USER_HZ is 100 on Linux). */
const cpuSeconds = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};
const rssMiB = (pid) => Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

// The existing listener's backend: echoes every byte.
const echo = createServer((s) => s.pipe(s));
await new Promise((r) => echo.listen(0, '127.0.0.1', r));
const echoListener = {
  ...bulkListener(LISTENERS, { address: ADDRESS, port: PORT_BASE - 1, backends: 0 }),
  protocol: 'tcp',
  backends: [
    {
      serverId: 'srv-echo0000000000000000',
      address: '127.0.0.1',
      port: echo.address().port,
      weight: 100,
      healthy: true,
    },
  ],
};

/** The snapshot as the API sends it to a node that reads backend sets: equal backends once, named by id. */
function withBackendSets(snapshot) {
  const ids = new Map();
  const listeners = snapshot.listeners.map(({ backends, ...fields }) => {
    if (backends.length === 0) return { ...fields, backends };
    const key = JSON.stringify(backends);
    if (!ids.has(key)) ids.set(key, `s${ids.size}`);
    return { ...fields, backendSet: ids.get(key) };
  });
  const backendSets = [...ids].map(([key, id]) => ({ id, backends: JSON.parse(key) }));
  return { ...snapshot, listeners, backendSets };
}

const heartbeats = [];
const acks = new Map();
const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
await new Promise((r) => wss.once('listening', r));
let channel;
wss.on('connection', (ws) => {
  channel = ws;
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString());
    if (m.type === 'heartbeat') heartbeats.push({ at: performance.now(), applying: m.applying });
    if (m.type === 'ack') acks.set(m.version, performance.now());
    if (m.type === 'hello') onHello(m);
  });
});
const send = (m) => channel.send(JSON.stringify(m));

/** What the stand-in controller sends a node that says hello: the one-listener config, or (RESTART) the fleet. */
let onHello = () =>
  send({
    type: 'snapshot',
    kind: 'l4',
    snapshot: { version: 1, generatedAt: new Date().toISOString(), listeners: [echoListener], l7Nodes: [] },
  });
const startNode = () => {
  const node = spawn(
    process.execPath,
    [
      ...(process.env.PROF === '1' ? ['--cpu-prof', '--cpu-prof-dir=prof'] : []),
      ...nodeArgs,
      join(root, 'apps/l4-node/dist/main.js'),
    ],
    {
      env: {
        ...process.env,
        SLB_API_URL: `http://127.0.0.1:${wss.address().port}`,
        SLB_NODE_TOKEN: 'node-join-bench-token',
        SLB_NODE_ID: 'node-join-bench',
        SLB_NODE_ADDRESS: ADDRESS,
        SLB_STATE_DIR: dir,
        SLB_METRICS_PORT: '0',
        SLB_SESSION_SYNC_REDIS_URL: SYNC ? REDIS_URL : 'off',
        SLB_SESSION_SYNC_PREFIX: SYNC_PREFIX,
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  for (const stream of [node.stdout, node.stderr])
    createInterface({ input: stream }).on('line', (line) => {
      if (LOG_DIR) appendFileSync(join(LOG_DIR, 'node-join.log'), `${line}\n`);
      try {
        lines.push(JSON.parse(line));
      } catch {
        lines.push({ msg: line });
      }
    });
  return node;
};
const lines = [];
let child = startNode();
/** A Prometheus gauge's value in a scrape of the node's metrics. */
const gauge = (text, name) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1]);
const gaugeMiB = (text, name) => Math.round(gauge(text, name) / 1048576);
const until = async (what, ok, ms = 120_000) => {
  for (const end = Date.now() + ms; !ok(); await sleep(10)) if (Date.now() > end) throw new Error(`no ${what}`);
};

/** The saved file's version, from its first bytes (the node writes `version` first). */
function savedVersion() {
  try {
    const fd = openSync(join(dir, 'last-known-good.json'), 'r');
    const buf = Buffer.alloc(32);
    readSync(fd, buf, 0, 32, 0);
    closeSync(fd);
    return Number(/^\{"version":(\d+)/.exec(buf.toString('latin1'))?.[1]);
  } catch {
    return Number.NaN;
  }
}

/**
 * RESTART=1: the node killed once its file holds version `saved`, as a crash, and started again on its state
 * dir. It serves the saved file, then the controller answers its hello with `version`: resumed, a delta with
 * nothing in it (as the API answers a node back on it with what it was sent last, nothing having changed);
 * else the same fleet again as a whole snapshot (as after an API restart, or from an API without resumes).
 * Memory is read 3 s after the ack and again IDLE_S later.
 */
async function restartNode(big, { saved, version, resume }) {
  await until(`version ${saved} in the saved file`, () => savedVersion() === saved);
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  const whole = JSON.stringify({
    type: 'snapshot',
    kind: 'l4',
    snapshot: { ...(SETS ? withBackendSets(big) : big), version },
  });
  const delta = { type: 'delta', kind: 'l4', fromVersion: saved, version, generatedAt: new Date().toISOString() };
  let resumed = false;
  onHello = (hello) => {
    resumed = resume && hello.appliedEpoch === EPOCH && hello.appliedVersion === saved;
    channel.send(resumed ? JSON.stringify({ ...delta, upsert: [], remove: [] }) : whole);
  };
  const from = lines.length;
  const startedAt = Date.now();
  const t = performance.now();
  child = startNode();
  await until(`ack of version ${version}`, () => acks.has(version));
  const resyncAckMs = Math.round(acks.get(version) - t);
  const after = lines.slice(from);
  const served = after.find((l) => l.msg === 'serving the saved snapshot until the control plane answers');
  await sleep(3000);
  const port = after.find((l) => l.msg === 'metrics listening')?.metricsPort;
  const metrics = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
  const rssAckedMiB = Math.round(rssMiB(child.pid));
  await sleep(IDLE_S * 1000);
  return {
    resync: resumed ? 'resumed: an empty delta' : 'the whole fleet again',
    savedServedMs: served ? served.time - startedAt : null,
    resyncAckMs,
    resyncApplyMs: after.find((l) => l.msg === 'config applied' && l.version === version)?.applyMs,
    rssMiB: rssAckedMiB,
    heapUsedMiB: gaugeMiB(metrics, 'nodejs_heap_size_used_bytes'),
    heapTotalMiB: gaugeMiB(metrics, 'nodejs_heap_size_total_bytes'),
    externalMiB: gaugeMiB(metrics, 'nodejs_external_memory_bytes'),
    rssAtRestMiB: Math.round(rssMiB(child.pid)),
  };
}

try {
  if (LOG_DIR) mkdirSync(LOG_DIR, { recursive: true });
  await until('ack of version 1', () => acks.has(1));
  // Echo traffic through the existing listener: one byte every 10 ms, each round trip timed.
  const rtts = [];
  const sock = createConnection({ host: ADDRESS, port: PORT_BASE - 1 });
  await new Promise((r, j) => sock.once('connect', r).once('error', j));
  sock.on('error', () => {}); // RESTART=1 kills the node under it
  let sentAt = 0;
  sock.on('data', () => {
    rtts.push({ at: sentAt, ms: performance.now() - sentAt });
    setTimeout(() => {
      sentAt = performance.now();
      sock.write('x');
    }, 10);
  });
  sentAt = performance.now();
  sock.write('x');
  await sleep(1500);
  const rssBefore = rssMiB(child.pid);
  // The node's own longest event-loop delay (prom-client's, reset at every scrape): scraped now to reset it.
  const metricsPort = lines.find((l) => l.msg === 'metrics listening')?.metricsPort;
  const scrape = () => fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text());
  await scrape();
  const big = largeL4Snapshot({
    version: 2,
    listeners: LISTENERS,
    backends: BACKENDS,
    address: ADDRESS,
    portBase: PORT_BASE,
    group: GROUP,
    sessionSync: SYNC,
    first: [echoListener],
  });
  // The epoch the API's first snapshot carries: the node saves it and names it in its hello after a restart.
  big.epoch = EPOCH;
  const text = JSON.stringify({ type: 'snapshot', kind: 'l4', snapshot: SETS ? withBackendSets(big) : big });
  const t0 = performance.now();
  channel.send(text);
  await until('ack of version 2', () => acks.has(2));
  const ackMs = acks.get(2) - t0;
  await sleep(3000); // the save to disk, and what the apply left behind
  const t1 = performance.now();
  const scraped = await scrape();
  const nodeLagMaxMs = Math.round(gauge(scraped, 'nodejs_eventloop_lag_max_seconds') * 1000);
  // What the applied config holds, before the removal below: RSS, and the V8 heap in use and outside it.
  const rssAppliedMiB = Math.round(rssMiB(child.pid));
  // What holding the fleet costs the node at rest (its timers, sweeps, heartbeats): CPU over IDLE_S seconds
  // with only the echo traffic, on one listener of 10,001.
  const cpuBefore = cpuSeconds(child.pid);
  await sleep(IDLE_S * 1000);
  const idleCpuPct = +(((cpuSeconds(child.pid) - cpuBefore) / IDLE_S) * 100).toFixed(1);
  const mib = (name) => gaugeMiB(scraped, name);
  const gaps = (xs) => xs.slice(1).map((x, i) => x.at - xs[i].at);
  const beats = heartbeats.filter((h) => h.at >= t0 - 1000 && h.at <= t1);
  const applied = lines.find((l) => l.msg === 'config applied' && l.version === 2);
  const rssAfterMiB = Math.round(rssMiB(child.pid));
  // Resumed first, then (saved again at version 4) given the whole fleet: the two answers a restart can get.
  const restart = RESTART
    ? [
        await restartNode(big, { saved: 2, version: 4, resume: true }),
        await restartNode(big, { saved: 4, version: 5, resume: false }),
      ]
    : undefined;
  // Every bulk listener removed again: what a node does when its LBs move away.
  const t2 = performance.now();
  send({ type: 'snapshot', kind: 'l4', snapshot: { ...big, version: 3, listeners: [echoListener] } });
  await until('ack of version 3', () => acks.has(3));
  const removeAckMs = Math.round(acks.get(3) - t2);
  sock.destroy();
  console.log(
    JSON.stringify({
      listeners: LISTENERS + 1,
      backends: LISTENERS * BACKENDS + 1,
      backendSets: SETS,
      sessionSync: SYNC,
      snapshotMB: +(text.length / 1e6).toFixed(1),
      sendToAckMs: Math.round(ackMs),
      applyMs: applied?.applyMs,
      nodeEventLoopLagMaxMs: nodeLagMaxMs,
      removeAckMs,
      maxHeartbeatGapMs: Math.round(Math.max(...gaps(beats))),
      heartbeatsSayingApplying: beats.filter((h) => h.applying !== undefined).length,
      maxEchoRttMs: Math.round(Math.max(...rtts.filter((r) => r.at >= t0 && r.at <= t1).map((r) => r.ms))),
      idleCpuPct,
      rssBeforeMiB: Math.round(rssBefore),
      rssAppliedMiB,
      heapUsedMiB: mib('nodejs_heap_size_used_bytes'),
      heapTotalMiB: mib('nodejs_heap_size_total_bytes'),
      externalMiB: mib('nodejs_external_memory_bytes'),
      rssAfterMiB,
      perBackendKiB: +(((rssAfterMiB - rssBefore) * 1024) / (LISTENERS * BACKENDS)).toFixed(2),
      restart,
      load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
    }),
  );
} finally {
  child.kill('SIGINT');
  await new Promise((r) => child.once('exit', r));
  wss.close();
  echo.close();
  rmSync(dir, { recursive: true, force: true });
  if (SYNC) await deleteRedisKeys(REDIS_URL, [`${SYNC_PREFIX}*`]);
}
process.exit(0);
