/** The sharing row: new connections/s through one VIP served by one node, then by two sharing it. */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../free-port.mjs';
import { cpuSeconds } from '../proc-cpu.mjs';
import { children, sleep, work } from './context.mjs';
import { kill9, listener, startNode } from './nodes.mjs';

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

export async function sharing(aa) {
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
