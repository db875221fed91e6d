#!/usr/bin/env node
// L4 node benchmark, loopback only: direct vs l4-node vs HAProxy (mode tcp), as ratios measured in one run.
//
//   node bench/l4.mjs                   # ~2 min: bulk (iperf3), new connections/s (wrk, Connection: close),
//                                       # UDP request/response, Maglev build + lookup
//   DUR=10 node bench/l4.mjs            # longer runs (default DUR=3 s per measurement)
//   ROUNDS=5 node bench/l4.mjs          # bulk and new-connection rounds, targets interleaved, best of each (default 3)
//   node bench/l4.mjs --serve LISTEN UPSTREAM
//                                       # foreground l4-node proxying 127.0.0.1:LISTEN → 127.0.0.1:UPSTREAM,
//                                       # for ../shared/bench/anchors.sh EXTRA_L4
//
// Layout as in ../shared/bench/anchors.sh: load generators and backends on CPU 0, the proxy under test alone
// on CPU 1 (haproxy nbthread 1, l4-node one process). The conn-rate backend is a second HAProxy answering
// `ok` itself (a C server on CPU 0, so the client side is not the bottleneck). HAProxy has no UDP proxy, so
// UDP compares direct and l4-node only; its client (bench/udp-client.mjs) and echo server are Node processes on
// CPU 0, which they saturate first, so the UDP row also prints the node's CPU time per request. A plain Node
// pipe (../shared/bench/l4-pipe.cjs) runs alongside as the Node reference. CPU µs/conn is the proxy process's
// user + system time per connection in its best round (from /proc). Installs haproxy, iperf3 and wrk with
// apt-get when missing (root).
// Every process it starts is stopped by PID on exit.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds } from './proc-cpu.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MAIN = join(ROOT, 'apps/l4-node/dist/main.js');
const DUR = Number(process.env.DUR ?? 3);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const LOAD_CPU = '0';
const PROXY_CPU = '1';
const work = mkdtempSync(join(tmpdir(), 'bench-l4-'));
const children = [];

function id(prefix, n) {
  return `${prefix}-${String(n).padStart(20, '0')}`;
}

function snapshot(listeners) {
  return {
    version: 1,
    generatedAt: new Date().toISOString(),
    l7Nodes: [],
    listeners: listeners.map(([n, protocol, listen, upstream]) => ({
      id: id('lsn', n),
      loadBalancerId: id('lb', 1),
      tenantId: id('tnt', 1),
      protocol,
      port: listen,
      bindAddresses: ['127.0.0.1'],
      scheduler: 'wrr',
      persistenceTimeout: 0,
      proxyProtocol: 'off',
      connectionDrainTimeout: 0,
      idleTimeout: 60,
      sessionSync: false,
      backends: [{ serverId: id('srv', 1), address: '127.0.0.1', port: upstream, weight: 100, healthy: true }],
    })),
  };
}

function startNode(listeners, cpu, nodeFlags = []) {
  const file = join(work, `snapshot-${listeners[0][2]}.json`);
  writeFileSync(file, JSON.stringify(snapshot(listeners)));
  const env = {
    ...process.env,
    SLB_METRICS_PORT: '0',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    SLB_CONFIG_POLL_MS: '0',
  };
  return cpu === undefined
    ? spawn(process.execPath, [...nodeFlags, MAIN, '--config', file], { env, stdio: 'inherit' })
    : start('l4-node', cpu, process.execPath, [...nodeFlags, MAIN, '--config', file], env);
}

if (process.argv[2] === '--serve') {
  const [listen, upstream] = process.argv.slice(3).map(Number);
  const child = startNode([[1, 'tcp', listen, upstream]]);
  const stop = () => child.kill('SIGTERM');
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  child.on('exit', (code) => {
    rmSync(work, { recursive: true, force: true });
    process.exit(code ?? 0);
  });
} else {
  await bench().finally(() => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    rmSync(work, { recursive: true, force: true });
  });
}

function start(name, cpu, cmd, args, env = process.env) {
  const c = spawn('taskset', ['-c', cpu, cmd, ...args], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  c.name = name;
  children.push(c);
  return c;
}

function have(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

function install() {
  const need = ['haproxy', 'iperf3', 'wrk'].filter((c) => !have(c));
  if (need.length === 0) return;
  console.error(`apt-get install ${need.join(' ')}`);
  execFileSync('apt-get', ['update', '-q'], { stdio: 'ignore' });
  execFileSync('apt-get', ['install', '-y', '-q', ...need], {
    stdio: 'ignore',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

async function waitPort(port, proto = 'tcp') {
  if (proto === 'udp') return new Promise((r) => setTimeout(r, 300));
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise((resolve) => {
      const s = net.connect({ port, host: '127.0.0.1' });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing listening on ${port}`);
}

function iperf(port) {
  const out = execFileSync('taskset', [
    '-c',
    LOAD_CPU,
    'iperf3',
    '-c',
    '127.0.0.1',
    '-p',
    String(port),
    '-t',
    String(DUR),
    '-J',
  ]);
  return JSON.parse(out.toString()).end.sum_received.bits_per_second / 1e9;
}

function wrk(port) {
  const out = execFileSync('taskset', [
    '-c',
    LOAD_CPU,
    'wrk',
    '-t1',
    '-c32',
    `-d${DUR}s`,
    '-H',
    'Connection: close',
    `http://127.0.0.1:${port}/ok`,
  ]).toString();
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
  const errors = /Socket errors: (.*)/.exec(out)?.[1] ?? '';
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1];
  return { rps, note: [errors, non2xx ? `non2xx=${non2xx}` : ''].filter(Boolean).join(' ') };
}

function timeWait() {
  const out = spawnSync('ss', ['-s'], { encoding: 'utf8' }).stdout ?? '';
  return /timewait (\d+)/.exec(out)?.[1] ?? '?';
}

/** UDP request/response rate from bench/udp-client.mjs, pinned with the other load generators. */
function udpRate(port) {
  const out = execFileSync('taskset', [
    '-c',
    LOAD_CPU,
    process.execPath,
    join(ROOT, 'bench/udp-client.mjs'),
    String(port),
    String(DUR),
  ]);
  const [rate, replies] = out.toString().trim().split(' ').map(Number);
  return { rate, replies };
}

async function maglev() {
  const { buildMaglevTable, hashFourTuple } = await import(join(ROOT, 'packages/balancing/dist/index.js'));
  const backends = Array.from({ length: 1000 }, (_, i) => ({ id: `srv-${i}`, weight: 100 }));
  const times = [];
  let table;
  for (let i = 0; i < 15; i++) {
    const t0 = performance.now();
    table = buildMaglevTable(backends);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const flow = { srcAddr: '198.51.100.23', srcPort: 0, dstAddr: '127.0.0.11', dstPort: 443 };
  const N = 2_000_000;
  let sink = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    flow.srcPort = i & 0xffff;
    sink += table.slots[hashFourTuple(flow) % table.size];
  }
  const ns = Number(process.hrtime.bigint() - t0) / N;
  return { buildMedianMs: times[7], buildMaxMs: times[14], lookupNs: ns, sink };
}

async function bench() {
  execFileSync('npx', ['tsc', '-b', 'apps/l4-node'], { cwd: ROOT, stdio: 'inherit' });
  const mg = await maglev();
  console.log(
    `Maglev M=65537 N=1000: build median ${mg.buildMedianMs.toFixed(2)} ms (max ${mg.buildMaxMs.toFixed(2)} ms, goal ≤ 20 ms); ` +
      `4-tuple hash + lookup ${mg.lookupNs.toFixed(1)} ns`,
  );
  install();
  // Each target reaches the `ok` backend on a port of its own: a run's tens of thousands of TIME_WAIT
  // sockets then never share a 4-tuple space with the next target's connections (the backend closes first,
  // so they pile up on its ports).
  const P = {
    iperf: 18501,
    http: 18502,
    udp: 18503,
    hIperf: 18511,
    hHttp: 18512,
    hBackend: 18513,
    nIperf: 18521,
    nHttp: 18522,
    nUdp: 18523,
    nBackend: 18524,
    pIperf: 18531,
    pHttp: 18532,
    pBackend: 18534,
  };
  writeFileSync(
    join(work, 'backend.cfg'),
    `global\n  nbthread 1\n  maxconn 4096\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n` +
      `frontend ok\n  bind 127.0.0.1:${P.http}\n  bind 127.0.0.1:${P.hBackend}\n  bind 127.0.0.1:${P.nBackend}\n  bind 127.0.0.1:${P.pBackend}\n` +
      `  http-request return status 200 content-type text/plain string ok\n`,
  );
  writeFileSync(
    join(work, 'proxy.cfg'),
    `global\n  nbthread 1\n  maxconn 4096\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n` +
      `listen iperf\n  bind 127.0.0.1:${P.hIperf}\n  server s 127.0.0.1:${P.iperf}\n` +
      `listen http\n  bind 127.0.0.1:${P.hHttp}\n  server s 127.0.0.1:${P.hBackend}\n`,
  );
  start('iperf3-s', LOAD_CPU, 'iperf3', ['-s', '-B', '127.0.0.1', '-p', String(P.iperf)]);
  start('backend', LOAD_CPU, 'haproxy', ['-db', '-f', join(work, 'backend.cfg')]);
  start('udp-echo', LOAD_CPU, process.execPath, [
    '-e',
    `const s=require('dgram').createSocket('udp4');s.on('message',(m,r)=>s.send(m,r.port,r.address));s.bind(${P.udp},'127.0.0.1')`,
  ]);
  // taskset execs its command, so these children are the proxies themselves (for their CPU time).
  const haproxy = start('haproxy', PROXY_CPU, 'haproxy', ['-db', '-f', join(work, 'proxy.cfg')]);
  const node = startNode(
    [
      [1, 'tcp', P.nIperf, P.iperf],
      [2, 'tcp', P.nHttp, P.nBackend],
      [3, 'udp', P.nUdp, P.udp],
    ],
    PROXY_CPU,
  );
  // The plain Node proxy of ../shared/bench/l4-pipe.cjs (net.Server, socket.pipe() both ways): what a Node TCP
  // proxy built on Node's streams costs here. The node drives libuv handles itself (apps/l4-node/src/raw-tcp.ts)
  // and should beat it; the ratio shows that apart from how fast this machine is.
  const PIPE = 'node net pipe';
  const pipeSrc =
    `const net=require('net');net.createServer({noDelay:true},(c)=>{const u=net.connect({host:'127.0.0.1',port:+process.argv[2],noDelay:true});` +
    `const k=()=>{c.destroy();u.destroy()};c.on('error',k);u.on('error',k);c.pipe(u);u.pipe(c)})` +
    `.listen({port:+process.argv[1],host:'127.0.0.1',backlog:4096})`;
  start('node-pipe', PROXY_CPU, process.execPath, ['-e', pipeSrc, String(P.pIperf), String(P.iperf)]);
  const pipe = start('node-pipe', PROXY_CPU, process.execPath, ['-e', pipeSrc, String(P.pHttp), String(P.pBackend)]);
  for (const p of [P.iperf, P.http, P.hIperf, P.hHttp, P.nIperf, P.nHttp, P.pIperf, P.pHttp]) await waitPort(p);
  await waitPort(P.udp, 'udp');
  // Warm-up: the node's JIT needs load before it reaches steady state.
  wrkWarm(P.nHttp);
  wrkWarm(P.pHttp);
  wrkWarm(P.hHttp);

  const rows = [];
  // Bulk and new connections: rounds interleave the targets (so a slow spell of the machine hits all of them
  // alike), and each target's best round counts.
  const bulk = { direct: 0, haproxy: 0, 'l4-node': 0, [PIPE]: 0 };
  const iperfPorts = { direct: P.iperf, haproxy: P.hIperf, 'l4-node': P.nIperf, [PIPE]: P.pIperf };
  for (let round = 0; round < ROUNDS; round++) {
    for (const t of ['l4-node', PIPE, 'haproxy', 'direct']) {
      const gbps = iperf(iperfPorts[t]);
      console.error(`  bulk round ${round + 1}: ${t} ${gbps.toFixed(2)} Gbit/s`);
      bulk[t] = Math.max(bulk[t], gbps);
    }
  }
  const none = () => ({ rps: 0, note: '', cpuUs: undefined });
  const conn = { direct: none(), haproxy: none(), 'l4-node': none(), [PIPE]: none() };
  const ports = { direct: P.http, haproxy: P.hHttp, 'l4-node': P.nHttp, [PIPE]: P.pHttp };
  const procs = { haproxy: [haproxy], 'l4-node': [node], [PIPE]: [pipe] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const t of ['l4-node', PIPE, 'haproxy', 'direct']) {
      const p = procs[t] ?? [];
      const cpu0 = cpuSeconds(p);
      const r = wrk(ports[t]);
      r.cpuUs = p.length === 0 ? undefined : ((cpuSeconds(p) - cpu0) * 1e6) / (r.rps * DUR);
      console.error(`  new conn/s round ${round + 1}: ${t} ${r.rps.toFixed(0)} (${timeWait()} sockets in TIME_WAIT)`);
      if (r.rps > conn[t].rps) conn[t] = r;
    }
  }
  const udp = { direct: udpRate(P.udp).rate };
  const nodeCpu0 = cpuSeconds([node]);
  const nodeUdp = udpRate(P.nUdp);
  udp['l4-node'] = nodeUdp.rate;
  // Over the client's whole run: every reply it counted, warm-up included.
  const udpCpuUs = ((cpuSeconds([node]) - nodeCpu0) * 1e6) / nodeUdp.replies;
  for (const t of ['direct', 'haproxy', 'l4-node', PIPE]) {
    rows.push({
      target: t,
      'bulk Gbit/s': bulk[t].toFixed(2),
      'new conn/s': conn[t].rps.toFixed(0),
      'CPU µs/conn': conn[t].cpuUs === undefined ? '—' : conn[t].cpuUs.toFixed(0),
      'UDP req/s': udp[t] === undefined ? '—' : udp[t].toFixed(0),
      'CPU µs/UDP req': t === 'l4-node' ? udpCpuUs.toFixed(1) : '—',
      errors: conn[t].note,
    });
  }
  console.table(rows);
  console.log(
    `l4-node / haproxy: bulk ${(bulk['l4-node'] / bulk.haproxy).toFixed(2)}× (goal ≥ 0.95), ` +
      `new conn/s ${(conn['l4-node'].rps / conn.haproxy.rps).toFixed(2)}× (goal ≥ 0.5); ` +
      `l4-node / direct: UDP req/s ${(udp['l4-node'] / udp.direct).toFixed(2)}×`,
  );
  console.log(
    `l4-node / ${PIPE}: bulk ${(bulk['l4-node'] / bulk[PIPE]).toFixed(2)}×, new conn/s ${(conn['l4-node'].rps / conn[PIPE].rps).toFixed(2)}×; ` +
      `${PIPE} / haproxy: new conn/s ${(conn[PIPE].rps / conn.haproxy.rps).toFixed(2)}×`,
  );
}

function wrkWarm(port) {
  execFileSync(
    'taskset',
    ['-c', LOAD_CPU, 'wrk', '-t1', '-c16', '-d2s', '-H', 'Connection: close', `http://127.0.0.1:${port}/ok`],
    {
      stdio: 'ignore',
    },
  );
}
