#!/usr/bin/env node
// VIP bench, loopback only: what carrying each LB on its own virtual IP costs and buys, in one run.
//
//   node bench/vip.mjs              # ~4 min: failover (active-active and active-standby), scale, sharing
//   KILLS=5 node bench/vip.mjs      # fewer SIGKILLs per failover row (default 20)
//   ONLY=scale node bench/vip.mjs   # one row: failover-aa, failover-as (with the 1,000 LBs row), scale or sharing
//   LBS=200 node bench/vip.mjs      # fewer LBs on one port (default 1,000)
//
// Rows:
// - failover, active-active: two l4-node processes (file mode, session sync over Redis) share one VIP:port
//   with SO_REUSEPORT, under steady TCP connections and UDP flows aimed at the VIP only; one of them is
//   SIGKILLed KILLS times (and started again). Counted: new connections refused or timed out (goal 0), those
//   the dying node had already accepted (lost with it: the goal excludes them), UDP flows that changed backend,
//   the longest gap between two successful connections.
// - failover, active-standby: the local cloud (API, health workers, two L4 and two L7 nodes; the L4 nodes run
//   with SLB_REUSE_PORT=off, as on Node 20): the node binding the VIP is SIGKILLed KILLS times (the other takes
//   the VIP over; the killed one comes back as standby). Per kill, the gap from the kill to the next
//   successful connection through the VIP; goal p99 ≤ 3 s.
// - 1,000 LBs on one port: created through that cloud's API, each with a TCP listener on the same port; time
//   to all active, how the VIPs spread over the two nodes, one connection to every VIP.
// - scale: one l4-node given 10,000 listeners, each on a VIP of its own (127.3.x.y) and the same port: time
//   from start to every listener bound, RSS after.
// - sharing: new connections/s (wrk, Connection: close, an HAProxy backend answering `ok`) through one VIP served
//   by one node, then by two nodes sharing it. Load generator and backend on CPU 0, the node(s) on CPU 1:
//   on this 2-core machine the two nodes share one core, so the row shows what sharing costs, not the
//   capacity a second host adds. Each node's share of the connections is printed (the kernel's spread).
//
// Active-active needs SO_REUSEPORT from the runtime (Node.js >= 22.12): the nodes run under NODE_AA, else
// this Node.js if it has it, else .ci/node24 (as `bash .ci/run` installs it). Installs haproxy and wrk with
// apt-get when missing (root). Every process it starts is stopped on exit.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import dgram from 'node:dgram';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCloud, stopAllChildren } from '../test/chaos/cloud.mjs';
import { cpuSeconds } from './proc-cpu.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MAIN = join(ROOT, 'apps/l4-node/dist/main.js');
const KILLS = Number(process.env.KILLS ?? 20);
const ONLY = process.env.ONLY;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const work = mkdtempSync(join(tmpdir(), 'bench-vip-'));
const children = new Set();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pad = (n, w = 20) => String(n).padStart(w, '0');

function reusePortNode() {
  const candidates = [
    process.env.NODE_AA,
    process.execPath,
    join(ROOT, `.ci/node24/node_modules/node-linux-${process.arch}/bin/node`),
  ];
  for (const bin of candidates) {
    if (!bin || !existsSync(bin)) continue;
    const v = spawnSync(bin, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
    const [major, minor] = v.split('.').map(Number);
    if (major > 22 || (major === 22 && minor >= 12)) return { bin, version: v };
  }
  return undefined;
}

function listener(n, protocol, vip, port, backends, extra = {}) {
  return {
    id: `lsn-${pad(n)}`,
    loadBalancerId: `lb-${pad(n)}`,
    tenantId: `tnt-${pad(1)}`,
    protocol,
    port,
    bindAddresses: [vip],
    scheduler: 'wrr',
    persistenceTimeout: 0,
    proxyProtocol: 'off',
    connectionDrainTimeout: 0,
    idleTimeout: 30,
    sessionSync: true,
    backends: backends.map((b, i) => ({
      serverId: `srv-${pad(i + 1)}`,
      address: '127.0.0.1',
      port: b,
      weight: 100,
      healthy: true,
    })),
    ...extra,
  };
}

/** An l4-node in file mode; resolves once it logged `config applied` (every listener bound or failed). */
function startNode(name, bin, snapshot, { cpu, env = {} } = {}) {
  const file = join(work, `${name}.json`);
  writeFileSync(file, JSON.stringify(snapshot));
  const args = [MAIN, '--config', file];
  const cmd = cpu === undefined ? bin : 'taskset';
  const child = spawn(cmd, cpu === undefined ? args : ['-c', cpu, bin, ...args], {
    env: {
      ...process.env,
      SLB_NODE_ID: name,
      SLB_NODE_ADDRESS: '127.0.0.1',
      SLB_METRICS_PORT: '0',
      SLB_CONFIG_POLL_MS: '0',
      LOG_LEVEL: 'info',
      REDIS_URL,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    let buf = '';
    let metricsPort;
    const errors = [];
    child.stdout.on('data', (d) => {
      buf += d;
      let i = buf.indexOf('\n');
      while (i >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        i = buf.indexOf('\n');
        let m;
        try {
          m = JSON.parse(line);
        } catch {
          continue;
        }
        if (m.metricsPort) metricsPort = m.metricsPort;
        if (m.level >= 50 && errors.length < 5) errors.push(m.reason ?? m.msg);
        if (m.msg === 'config applied')
          resolve({ child, ms: performance.now() - t0, failed: m.failed, metricsPort, errors });
      }
    });
    child.once('exit', (code, signal) => reject(new Error(`${name} exited (${signal ?? code}) before applying`)));
  });
}

function kill9(child) {
  return new Promise((r) => {
    if (child.exitCode !== null || child.signalCode !== null) return r();
    child.once('exit', () => r());
    child.kill('SIGKILL');
  });
}

/** TCP backends answering their name, and UDP ones echoing it, on 127.0.0.1. */
async function backends(names) {
  const tcp = [];
  const udp = [];
  for (const name of names) {
    const s = net.createServer((c) => {
      c.on('error', () => {});
      c.end(name);
    });
    await new Promise((r) => s.listen(0, '127.0.0.1', r));
    tcp.push(s.address().port);
    const u = dgram.createSocket('udp4');
    u.on('message', (_m, r) => u.send(name, r.port, r.address));
    await new Promise((r) => u.bind(0, '127.0.0.1', r));
    udp.push(u.address().port);
    children.add({
      kill: () => {
        s.close();
        u.close();
      },
      exitCode: null,
      signalCode: null,
    });
  }
  return { tcp, udp };
}

/**
 * Steady load on a VIP: `workers` loops of connect → read the backend's name → close (1 s timeout each), and
 * `flows` UDP flows asking every 20 ms. Failures are classified; gaps between successes are kept.
 */
function steadyLoad(vip, tcpPort, udpPort, { workers = 8, flows = 32 } = {}) {
  const s = {
    ok: 0,
    refused: 0,
    lostAccepted: 0,
    lastOk: performance.now(),
    gaps: [],
    udpSent: 0,
    udpReplies: 0,
    udpMoved: 0,
    running: true,
  };
  const once = () =>
    new Promise((resolve) => {
      const start = performance.now();
      const c = net.connect({ host: vip, port: tcpPort });
      let connected = false;
      let got = '';
      const timer = setTimeout(() => c.destroy(new Error('timeout')), 1000);
      c.on('connect', () => {
        connected = true;
      });
      c.on('data', (d) => {
        got += d;
      });
      c.on('error', () => {});
      c.on('close', () => {
        clearTimeout(timer);
        if (got.length > 0) {
          const now = performance.now();
          s.gaps.push({ at: now, start, ms: now - s.lastOk });
          s.lastOk = now;
          s.ok++;
          resolve();
        } else if (connected) {
          s.lostAccepted++;
          resolve();
        } else {
          // Refused at once: pause, so the count is of attempts at a steady pace, not of a spinning loop.
          s.refused++;
          setTimeout(resolve, 10);
        }
      });
    });
  const loops = Array.from({ length: workers }, async () => {
    while (s.running) await once();
  });
  const sockets = [];
  for (let i = 0; i < flows; i++) {
    const u = dgram.createSocket('udp4');
    u.bind(0, '127.0.0.1');
    let backend;
    u.on('message', (m) => {
      s.udpReplies++;
      const name = m.toString();
      if (backend !== undefined && backend !== name) s.udpMoved++;
      backend = name;
    });
    sockets.push(u);
  }
  const udpTimer = setInterval(() => {
    for (const u of sockets) {
      s.udpSent++;
      u.send('q', udpPort, vip);
    }
  }, 20);
  s.stop = async () => {
    s.running = false;
    clearInterval(udpTimer);
    await Promise.all(loops);
    await sleep(100);
    for (const u of sockets) u.close();
  };
  return s;
}

const p = (xs, q) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
};

async function failoverActiveActive(aa) {
  const { tcp, udp } = await backends(['b1', 'b2']);
  const vip = '127.2.0.10';
  const [tcpPort, udpPort] = [await freePort(), await freePort()];
  const snapshot = {
    version: 1,
    generatedAt: new Date().toISOString(),
    l7Nodes: [],
    sessionSyncPrefix: `bench-vip-${randomUUID()}:sync`,
    listeners: [
      listener(1, 'tcp', vip, tcpPort, tcp, { reusePort: true }),
      listener(2, 'udp', vip, udpPort, udp, { reusePort: true }),
    ],
  };
  const nodes = [await startNode('vip-a', aa.bin, snapshot), await startNode('vip-b', aa.bin, snapshot)];
  const load = steadyLoad(vip, tcpPort, udpPort);
  await sleep(1000);
  const before = { ...load, gaps: [] };
  const windows = [];
  for (let k = 0; k < KILLS; k++) {
    const i = k % 2;
    const t0 = performance.now();
    await kill9(nodes[i].child);
    await sleep(500);
    nodes[i] = await startNode(i === 0 ? 'vip-a' : 'vip-b', aa.bin, snapshot);
    await sleep(700);
    windows.push([t0, performance.now()]);
    process.stderr.write(`  active-active: kill ${k + 1}/${KILLS} (refused so far ${load.refused})\n`);
  }
  await load.stop();
  const longest = Math.max(...load.gaps.map((g) => g.ms));
  return {
    row: 'failover, active-active (SO_REUSEPORT)',
    kills: KILLS,
    'TCP ok': load.ok,
    'TCP refused/timed out': load.refused,
    'lost with the dying node': load.lostAccepted,
    'longest gap ms': longest.toFixed(0),
    'UDP replies/sent': `${load.udpReplies}/${load.udpSent}`,
    'UDP flows moved': load.udpMoved,
    _before: before,
  };
}

async function failoverActiveStandby() {
  process.env.SLB_REUSE_PORT = 'off'; // the cloud's L4 nodes carry VIPs as Node 20 would: active-standby
  process.env.SLB_QUOTA_DEFAULTS = 'loadBalancers=5000,listeners=10000,servers=10000';
  const outDir = join(work, 'cloud');
  const cloud = await startCloud({
    root: ROOT,
    outDir,
    l4: ['127.0.0.171', '127.0.0.172'],
    l7: ['127.0.0.181', '127.0.0.182'],
  });
  await cloud.startAll();
  const { tcp, udp } = await backends(['s1', 's2']);
  const lb = await cloud.ok('POST', '/v1/load-balancers', { name: 'bench-vip' });
  const mk = async (name, ports) =>
    (
      await cloud.ok('POST', `/v1/load-balancers/${lb.id}/server-groups`, {
        name,
        servers: ports.map((port) => ({ address: '127.0.0.1', port })),
      })
    ).id;
  const tcpGroup = await mk('tcp', tcp);
  const udpGroup = await mk('udp', udp);
  const [tcpPort, udpPort] = [await freePort(), await freePort()];
  const check = { enabled: false };
  await cloud.ok('POST', `/v1/load-balancers/${lb.id}/listeners`, {
    protocol: 'tcp',
    port: tcpPort,
    serverGroupId: tcpGroup,
    healthCheck: check,
  });
  await cloud.ok('POST', `/v1/load-balancers/${lb.id}/listeners`, {
    protocol: 'udp',
    port: udpPort,
    serverGroupId: udpGroup,
    healthCheck: check,
  });
  const nodes = (await cloud.ok('GET', '/v1/nodes?limit=100')).items;
  const nameOf = new Map(nodes.map((n) => [n.id, n.name]));
  const binder = async () => {
    for (let i = 0; i < 200; i++) {
      const v = await cloud.ok('GET', `/v1/load-balancers/${lb.id}`);
      const active = v.nodes.find((n) => n.kind === 'l4' && n.role === 'active' && n.online && n.converged);
      if (v.status === 'active' && active) return nameOf.get(active.nodeId);
      await sleep(100);
    }
    throw new Error('the LB did not become active');
  };
  await binder();
  const load = steadyLoad(lb.address, tcpPort, udpPort);
  await sleep(1000);
  const gaps = [];
  for (let k = 0; k < KILLS; k++) {
    const victim = await binder();
    const t0 = performance.now();
    await cloud.kill(victim);
    // The gap: from the kill to the next connection that succeeded through the VIP.
    for (let i = 0; i < 250 && !load.gaps.some((g) => g.start > t0); i++) await sleep(20);
    // A connection accepted before the kill may still complete after it: count those started after.
    const firstOk = load.gaps.find((g) => g.start > t0);
    gaps.push(firstOk ? firstOk.at - t0 : performance.now() - t0);
    await cloud.start(victim);
    await binder();
    await sleep(500);
    process.stderr.write(`  active-standby: kill ${k + 1}/${KILLS}: gap ${gaps.at(-1).toFixed(0)} ms\n`);
  }
  await load.stop();
  const many = await manyLbsOnOnePort(cloud, tcp);
  await stopAllChildren();
  delete process.env.SLB_REUSE_PORT;
  delete process.env.SLB_QUOTA_DEFAULTS;
  return [
    {
      row: 'failover, active-standby (takeover)',
      kills: KILLS,
      'TCP ok': load.ok,
      'TCP refused/timed out': load.refused,
      'lost with the dying node': load.lostAccepted,
      'gap ms p50/p99/max': `${p(gaps, 0.5).toFixed(0)}/${p(gaps, 0.99).toFixed(0)}/${Math.max(...gaps).toFixed(0)}`,
      'UDP replies/sent': `${load.udpReplies}/${load.udpSent}`,
      'UDP flows moved': load.udpMoved,
    },
    many,
  ];
}

/**
 * LBS load balancers (default 1,000), each with a TCP listener on the same port, through the API of the
 * running cloud: time from the first create to all active, and one connection to every VIP.
 */
async function manyLbsOnOnePort(cloud, backendPorts) {
  const N = Number(process.env.LBS ?? 1000);
  const port = await freePort();
  const t0 = performance.now();
  const ids = new Set();
  for (let i = 0; i < N; i++) {
    const lb = await cloud.ok('POST', '/v1/load-balancers', { name: `many-${i}` });
    const sg = await cloud.ok('POST', `/v1/load-balancers/${lb.id}/server-groups`, {
      name: 'one',
      servers: [{ address: '127.0.0.1', port: backendPorts[0] }],
    });
    await cloud.ok('POST', `/v1/load-balancers/${lb.id}/listeners`, {
      protocol: 'tcp',
      port,
      serverGroupId: sg.id,
      healthCheck: { enabled: false },
    });
    ids.add(lb.id);
    if ((i + 1) % 200 === 0) process.stderr.write(`  ${i + 1}/${N} LBs on :${port} created\n`);
  }
  const createdMs = performance.now() - t0;
  const listAll = async () => {
    const all = [];
    let cursor;
    do {
      const page = await cloud.ok('GET', `/v1/load-balancers?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
      all.push(...page.items.filter((lb) => ids.has(lb.id)));
      cursor = page.nextCursor;
    } while (cursor);
    return all;
  };
  let lbs = [];
  for (let i = 0; i < 300; i++) {
    lbs = await listAll();
    if (lbs.length === N && lbs.every((lb) => lb.status === 'active')) break;
    await sleep(200);
  }
  const activeMs = performance.now() - t0;
  const perNode = new Map();
  for (const lb of lbs) {
    for (const n of lb.nodes) if (n.role === 'active') perNode.set(n.nodeId, (perNode.get(n.nodeId) ?? 0) + 1);
  }
  let answered = 0;
  for (const lb of lbs) {
    const ok = await new Promise((resolve) => {
      const c = net.connect({ host: lb.address, port });
      let got = '';
      c.setTimeout(2000, () => c.destroy());
      c.on('data', (d) => {
        got += d;
      });
      c.on('error', () => resolve(false));
      c.on('close', () => resolve(got.length > 0));
    });
    if (ok) answered++;
  }
  return {
    row: `${N} LBs all on :${port}, two L4 nodes (active-standby)`,
    'created s': (createdMs / 1000).toFixed(1),
    'first create → all active s': (activeMs / 1000).toFixed(1),
    active: lbs.filter((lb) => lb.status === 'active').length,
    'VIPs per node': [...perNode.values()].join(' / '),
    'VIPs answering': `${answered}/${N}`,
  };
}

/** The i-th VIP of the scale row: 127.3.0.1, 127.3.0.2, … 127.3.39.16. */
const vipOf = (i) => `127.3.${(i + 1) >> 8}.${(i + 1) & 255}`;

async function scale(bin) {
  const { tcp } = await backends(['x']);
  const port = await freePort();
  const N = Number(process.env.SCALE_N ?? 10_000);
  const listeners = Array.from({ length: N }, (_, i) =>
    listener(i + 1, 'tcp', vipOf(i), port, tcp, { sessionSync: false }),
  );
  const snapshot = { version: 1, generatedAt: new Date().toISOString(), l7Nodes: [], listeners };
  // One tenant holds all 10,000 here: its share of the node's descriptors is the whole budget.
  const node = await startNode('vip-scale', bin, snapshot, {
    env: { SLB_SESSION_SYNC_REDIS_URL: 'off', SLB_TENANT_FD_SHARE: '1' },
  });
  const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${node.child.pid}/status`, 'utf8'))?.[1];
  // A sample of the VIPs answers, end to end.
  let answered = 0;
  for (let i = 0; i < N; i += 97) {
    const ok = await new Promise((resolve) => {
      const c = net.connect({ host: vipOf(i), port });
      let got = '';
      c.on('data', (d) => {
        got += d;
      });
      c.on('error', () => resolve(false));
      c.on('close', () => resolve(got === 'x'));
    });
    if (ok) answered++;
  }
  await kill9(node.child);
  return {
    row: `scale: ${N} VIP:port listeners on one node`,
    'process start → all bound ms': node.ms.toFixed(0),
    'failed listeners': node.failed,
    ...(node.failed > 0 ? { 'first failure': node.errors[0] } : {}),
    'RSS MiB': (Number(rss) / 1024).toFixed(0),
    'sampled VIPs answering': `${answered}/${Math.ceil(N / 97)}`,
  };
}

function wrk(vip, port, dur) {
  const out = execFileSync('taskset', [
    '-c',
    '0',
    'wrk',
    '-t1',
    '-c32',
    `-d${dur}s`,
    '-H',
    'Connection: close',
    `http://${vip}:${port}/ok`,
  ]).toString();
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
}

/** Busy share of each CPU between two reads of /proc/stat: what limited a row (generator on 0, nodes on 1). */
function cpuTimes() {
  return readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .filter((l) => /^cpu\d+ /.test(l))
    .map((l) => {
      const f = l.trim().split(/\s+/).slice(1).map(Number);
      const idle = f[3] + f[4];
      return { idle, total: f.reduce((a, b) => a + b, 0) };
    });
}
const busy = (a, b) =>
  a.map((x, i) => `${(100 * (1 - (b[i].idle - x.idle) / Math.max(1, b[i].total - x.total))) | 0}%`);

async function connectionsOf(metricsPort) {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('slb_l4_connections_total')) sum += Number(line.split(' ').at(-1));
  return sum;
}

async function sharing(aa) {
  for (const cmd of ['haproxy', 'wrk']) {
    if (spawnSync('sh', ['-c', `command -v ${cmd}`]).status !== 0) {
      execFileSync('apt-get', ['install', '-y', '-q', cmd], {
        stdio: 'ignore',
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      });
    }
  }
  const backendPort = await freePort();
  writeFileSync(
    join(work, 'backend.cfg'),
    `global\n  nbthread 1\n  maxconn 4096\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n` +
      `frontend ok\n  bind 127.0.0.1:${backendPort}\n  http-request return status 200 content-type text/plain string ok\n`,
  );
  const haproxy = spawn('taskset', ['-c', '0', 'haproxy', '-db', '-f', join(work, 'backend.cfg')], { stdio: 'ignore' });
  children.add(haproxy);
  await sleep(300);
  const DUR = Number(process.env.DUR ?? 5);
  const vip = '127.2.0.20';
  const rows = [];
  for (const count of [1, 2]) {
    const port = await freePort();
    const snapshot = {
      version: 1,
      generatedAt: new Date().toISOString(),
      l7Nodes: [],
      listeners: [listener(1, 'tcp', vip, port, [backendPort], { reusePort: true, sessionSync: false })],
    };
    const nodes = [];
    for (let i = 0; i < count; i++) {
      nodes.push(
        await startNode(`share-${count}-${i}`, aa.bin, snapshot, {
          cpu: '1',
          env: { SLB_SESSION_SYNC_REDIS_URL: 'off' },
        }),
      );
    }
    wrk(vip, port, 2); // warm-up
    const before = await Promise.all(nodes.map((n) => connectionsOf(n.metricsPort)));
    const cpu0 = cpuSeconds(nodes.map((n) => n.child));
    const cpus0 = cpuTimes();
    const rps = wrk(vip, port, DUR);
    const [gen, node] = busy(cpus0, cpuTimes());
    const cpuUs = ((cpuSeconds(nodes.map((n) => n.child)) - cpu0) * 1e6) / (rps * DUR);
    const after = await Promise.all(nodes.map((n) => connectionsOf(n.metricsPort)));
    const counts = after.map((a, i) => a - before[i]);
    const total = counts.reduce((a, b) => a + b, 0);
    rows.push({
      row: `sharing: one VIP, ${count} node${count > 1 ? 's' : ''}`,
      'new conn/s': rps.toFixed(0),
      'node CPU µs/conn': cpuUs.toFixed(0),
      'share per node': counts.map((c) => `${((100 * c) / Math.max(1, total)).toFixed(0)}%`).join(' / '),
      'CPU 0 busy (wrk, backend)': gen,
      'CPU 1 busy (node(s))': node,
    });
    for (const n of nodes) await kill9(n.child);
  }
  haproxy.kill('SIGTERM');
  rows[1].ratio = `${(Number(rows[1]['new conn/s']) / Number(rows[0]['new conn/s'])).toFixed(2)}× of one node`;
  return rows;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function main() {
  execFileSync('npx', ['tsc', '-b', 'apps/l4-node', 'apps/l7-node', 'apps/api', 'apps/health-worker'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  const aa = reusePortNode();
  if (!aa) console.log('active-active rows skipped: no Node.js >= 22.12 found (NODE_AA, this one, .ci/node24)');
  else console.log(`active-active nodes run on Node.js ${aa.version} (${aa.bin})`);
  const want = (row) => ONLY === undefined || ONLY === row;
  const rows = [];
  if (aa && want('failover-aa')) rows.push(await failoverActiveActive(aa));
  if (want('failover-as')) rows.push(...(await failoverActiveStandby()));
  if (want('scale')) rows.push(await scale(aa?.bin ?? process.execPath));
  if (aa && want('sharing')) rows.push(...(await sharing(aa)));
  for (const r of rows) {
    delete r._before;
    console.log(JSON.stringify(r));
  }
  const aaRow = rows.find((r) => r.row.startsWith('failover, active-active'));
  const asRow = rows.find((r) => r.row.startsWith('failover, active-standby'));
  if (aaRow) console.log(`active-active goal: 0 new connections refused → ${aaRow['TCP refused/timed out']}`);
  if (asRow) console.log(`active-standby goal: gap p99 ≤ 3000 ms → ${asRow['gap ms p50/p99/max'].split('/')[1]} ms`);
}

await main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await stopAllChildren().catch(() => {});
    rmSync(work, { recursive: true, force: true });
  });
