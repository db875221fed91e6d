#!/usr/bin/env node
// L7 node benchmark, loopback only: one wrk run per target, printed as ratios measured in the same run.
//
//   node bench/l7.mjs                 # direct, l7-node (fast path on and off), nginx, haproxy, node:http+undici,
//                                     # http-proxy, and the full L4 → L7 path; small (`ok`) and 16 KiB bodies.
//                                     # DUR=5 s per run, WARM=4 s warm-up per target and body (JITs need it).
//   ROUNDS=3 node bench/l7.mjs        # targets interleaved in rounds, best round of each (default 1; ~4 min each)
//   node bench/l7.mjs --serve LISTEN UPSTREAM
//                                     # foreground l7-node proxying 127.0.0.1:LISTEN → 127.0.0.1:UPSTREAM,
//                                     # for ../shared/bench/anchors.sh EXTRA_L7
//
// Layout as ../shared/bench/anchors.sh: wrk (-t2 -c64) and the nginx backend on CPU 0, the proxy under test
// alone on CPU 1 (nginx 1 worker, haproxy nbthread 1, one node process). In the L4 → L7 row both nodes share
// CPU 1. The l7-node runs with LOG_LEVEL=warn (no access log), as nginx/haproxy run with access logs off.
// Needs nginx, haproxy, wrk (apt-get) and the npm package http-proxy (HTTP_PROXY_DIR, a folder whose
// node_modules has it; the row is skipped without it). Every process it starts is stopped by PID on exit.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds } from './proc-cpu.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const L7_MAIN = join(ROOT, 'apps/l7-node/dist/main.js');
const L4_MAIN = join(ROOT, 'apps/l4-node/dist/main.js');
const SHARED = join(ROOT, '../shared/bench');
const ROUNDS = Number(process.env.ROUNDS ?? 1);
const DUR = Number(process.env.DUR ?? 5);
const WARM = Number(process.env.WARM ?? 4);
const LOAD_CPU = '0';
const PROXY_CPU = '1';
const work = mkdtempSync(join(tmpdir(), 'bench-l7-'));
const children = [];

const id = (prefix, n) => `${prefix}-${String(n).padStart(20, '0')}`;

function l7Snapshot(proxyPort, directPort, upstream) {
  const sg = id('sg', 1);
  return {
    version: 1,
    generatedAt: new Date().toISOString(),
    listeners: [
      {
        id: id('lsn', 1),
        loadBalancerId: id('lb', 1),
        tenantId: id('tnt', 1),
        protocol: 'http',
        port: proxyPort,
        directPort,
        scheduler: 'wrr',
        stickySession: null,
        xForwardedFor: true,
        idleTimeout: 60,
        requestTimeout: 60,
        certificates: [],
        defaultServerGroupId: sg,
        rules: [],
        serverGroups: [
          {
            id: sg,
            backends: [{ serverId: id('srv', 1), address: '127.0.0.1', port: upstream, weight: 100, healthy: true }],
          },
        ],
      },
    ],
  };
}

function start(name, cpu, cmd, args, env = process.env) {
  const c = spawn('taskset', ['-c', cpu, cmd, ...args], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  c.name = name;
  children.push(c);
  return c;
}

function startL7(name, proxyPort, directPort, upstream, cpu, env = {}) {
  const file = join(work, `${name}.json`);
  writeFileSync(file, JSON.stringify(l7Snapshot(proxyPort, directPort, upstream)));
  return start(name, cpu, process.execPath, [L7_MAIN, '--config', file], {
    ...process.env,
    LOG_LEVEL: process.env.L7_LOG_LEVEL ?? 'warn',
    SLB_METRICS_PORT: '0',
    ...env,
  });
}

if (process.argv[2] === '--serve') {
  const listen = Number(process.argv[3]);
  const upstream = Number(process.argv[4]);
  // PROXY v2 port one above the plain port the harness dials.
  const child = startL7('serve', listen + 1, listen, upstream, '0-63');
  const stop = () => child.kill('SIGTERM');
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  child.on('exit', (code) => process.exit(code ?? 0));
} else {
  await main();
  // The proxies are children: without this the bench would wait on them forever ('exit' stops them).
  process.exit(0);
}

function cleanup() {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
}

function have(cmd) {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function waitPort(port) {
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise((r) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        r(true);
      });
      s.on('error', () => r(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`port ${port} never opened`);
}

function nginxConf(name, body) {
  const d = join(work, name);
  mkdirSync(join(d, 'logs'), { recursive: true });
  mkdirSync(join(d, 'tmp'), { recursive: true });
  writeFileSync(
    join(d, 'nginx.conf'),
    `worker_processes 1; pid ${d}/nginx.pid; error_log ${d}/logs/error.log warn; worker_rlimit_nofile 16384;
events { worker_connections 8192; }
http { access_log off; default_type application/octet-stream; keepalive_timeout 65s; keepalive_requests 10000000;
  client_body_temp_path ${d}/tmp/body; proxy_temp_path ${d}/tmp/proxy; fastcgi_temp_path ${d}/tmp/fcgi;
  uwsgi_temp_path ${d}/tmp/uwsgi; scgi_temp_path ${d}/tmp/scgi;
  ${body}
}
`,
  );
  return d;
}

function startNginx(name, cpu, body) {
  const d = nginxConf(name, body);
  return start(name, cpu, 'nginx', [
    '-p',
    d,
    '-e',
    join(d, 'logs/error.log'),
    '-c',
    join(d, 'nginx.conf'),
    '-g',
    'daemon off;',
  ]);
}

function wrk(port, path, warm) {
  const args = [
    '-c',
    LOAD_CPU,
    'wrk',
    '-t2',
    '-c64',
    `-d${warm ? WARM : DUR}s`,
    '--latency',
    `http://127.0.0.1:${port}${path}`,
  ];
  const out = execFileSync('taskset', args, { encoding: 'utf8' });
  if (warm) return null;
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
  const p99m = /99%\s+([\d.]+)(us|ms|s)/.exec(out);
  const p99 = p99m ? Number(p99m[1]) * (p99m[2] === 'us' ? 0.001 : p99m[2] === 's' ? 1000 : 1) : Number.NaN;
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const errs = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? '0';
  const sock = /Socket errors: (.*)/.exec(out)?.[1] ?? '';
  return { rps, requests, p99, errors: Number(errs), sock };
}

async function main() {
  process.on('exit', cleanup);
  process.on('SIGINT', () => process.exit(130));
  const missing = ['nginx', 'haproxy', 'wrk', 'taskset'].filter((c) => !have(c));
  if (missing.length) throw new Error(`missing ${missing.join(', ')}: apt-get install -y nginx haproxy wrk util-linux`);

  // nginx workers run as an unprivileged user: the (0700) temp folder must be readable.
  chmodSync(work, 0o755);
  const www = join(work, 'www');
  mkdirSync(www, { mode: 0o755 });
  writeFileSync(join(www, 'ok'), 'ok');
  writeFileSync(join(www, '16k'), Buffer.alloc(16384, 'x'));
  const BE = 19080;
  startNginx(
    'backend',
    LOAD_CPU,
    `sendfile on; tcp_nopush on; tcp_nodelay on;
  server { listen 127.0.0.1:${BE} backlog=4096; root ${www}; location / { } }`,
  );

  // [name, port, processes whose CPU time counts as the proxy's]
  const targets = [['direct', BE, []]];
  const l7node = startL7('l7node', 19091, 19090, BE, PROXY_CPU);
  targets.push(['l7-node', 19090, [l7node]]);
  // The same node with the raw-socket fast path off (node:http + undici for every request).
  const nofast = startL7('l7node-nofast', 19093, 19092, BE, PROXY_CPU, { SLB_L7_FAST_PATH: '0' });
  targets.push(['l7-node (SLB_L7_FAST_PATH=0)', 19092, [nofast]]);
  const nginx = startNginx(
    'nginx',
    PROXY_CPU,
    `upstream be { server 127.0.0.1:${BE}; keepalive 64; keepalive_requests 10000000; keepalive_timeout 60s; }
  server { listen 127.0.0.1:19081 backlog=4096; location / { proxy_pass http://be; proxy_http_version 1.1;
    proxy_set_header Connection ""; proxy_set_header Host $host;
    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; } }`,
  );
  targets.push(['nginx', 19081, [nginx]]);
  const hap = join(work, 'haproxy.cfg');
  writeFileSync(
    hap,
    `global\n  nbthread 1\n  maxconn 4096\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n  timeout http-keep-alive 60s\n  option http-keep-alive\n  option forwardfor\n  http-reuse always\nfrontend fe\n  bind 127.0.0.1:19082\n  default_backend be\nbackend be\n  server s1 127.0.0.1:${BE}\n`,
  );
  targets.push(['haproxy', 19082, [start('haproxy', PROXY_CPU, 'haproxy', ['-db', '-f', hap])]]);
  const undici = start(
    'node-undici',
    PROXY_CPU,
    process.execPath,
    [join(SHARED, 'l7-undici.cjs'), '19083', String(BE), 'stream'],
    {
      ...process.env,
      NODE_PATH: join(ROOT, 'node_modules'),
    },
  );
  targets.push(['node-undici-stream', 19083, [undici]]);
  if (process.env.HTTP_PROXY_DIR) {
    const httpProxy = start(
      'http-proxy',
      PROXY_CPU,
      process.execPath,
      [join(SHARED, 'l7-http-proxy.cjs'), '19084', String(BE)],
      {
        ...process.env,
        NODE_PATH: join(process.env.HTTP_PROXY_DIR, 'node_modules'),
      },
    );
    targets.push(['node-http-proxy', 19084, [httpProxy]]);
  }
  let l4 = false;
  if (process.env.SKIP_L4 !== '1') {
    const l4file = join(work, 'l4.json');
    writeFileSync(
      l4file,
      JSON.stringify({
        version: 1,
        generatedAt: new Date().toISOString(),
        l7Nodes: [{ nodeId: 'node-l7-bench', address: '127.0.0.1', port: 19091, healthy: true }],
        listeners: [
          {
            id: id('lsn', 2),
            loadBalancerId: id('lb', 1),
            tenantId: id('tnt', 1),
            protocol: 'http',
            port: 19085,
            bindAddresses: ['127.0.0.1'],
            scheduler: 'wrr',
            persistenceTimeout: 0,
            proxyProtocol: 'off',
            connectionDrainTimeout: 0,
            idleTimeout: 60,
            sessionSync: false,
            backends: [],
          },
        ],
      }),
    );
    const l4node = start('l4node', PROXY_CPU, process.execPath, [L4_MAIN, '--config', l4file], {
      ...process.env,
      LOG_LEVEL: 'warn',
      SLB_METRICS_PORT: '0',
    });
    targets.push(['l4-node → l7-node', 19085, [l4node, l7node]]);
    l4 = true;
  }
  for (const [name, port] of targets) {
    await waitPort(port);
    const ok = await fetch(`http://127.0.0.1:${port}/ok`).then((r) => r.text());
    const big = await fetch(`http://127.0.0.1:${port}/16k`).then((r) => r.arrayBuffer());
    if (ok !== 'ok' || big.byteLength !== 16384) throw new Error(`${name} does not proxy correctly (body '${ok}')`);
  }

  // Rounds go over every target in turn, so a slow spell of the machine hits them alike; each target's best
  // round counts.
  const best = new Map();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, port, procs] of targets) {
      for (const body of ['ok', '16k']) {
        // Each body warms up on its own: the 16k run exercises other code (body forwarding) than `ok`.
        if (round === 0) wrk(port, `/${body}`, true);
        const cpu0 = cpuSeconds(procs);
        const r = wrk(port, `/${body}`, false);
        const cpuUs = procs.length === 0 ? Number.NaN : ((cpuSeconds(procs) - cpu0) * 1e6) / r.requests;
        const key = `${name} ${body}`;
        if (!best.has(key) || r.rps > best.get(key).rps) best.set(key, { name, body, ...r, cpuUs });
        process.stderr.write(
          `${ROUNDS > 1 ? `round ${round + 1}: ` : ''}${name} ${body}: ${Math.round(r.rps)} req/s p99 ${r.p99.toFixed(2)} ms\n`,
        );
      }
    }
  }
  const rows = [...best.values()];
  const find = (n, b) => rows.find((r) => r.name === n && r.body === b);
  console.log(
    `\nL7 bench, wrk -t2 -c64 ${DUR}s after ${WARM}s warm-up${ROUNDS > 1 ? `, best of ${ROUNDS} rounds` : ''}; ` +
      `proxies alone on CPU ${PROXY_CPU}${l4 ? '' : ' (no L4 row)'}\n`,
  );
  console.log('| target | body | req/s | p99 ms | errors | vs nginx | vs best node peer | proxy CPU µs/req |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const ngx = find('nginx', r.body)?.rps ?? Number.NaN;
    const peers = rows.filter((x) => x.body === r.body && x.name.startsWith('node-'));
    const best = Math.max(...peers.map((x) => x.rps));
    console.log(
      `| ${r.name} | ${r.body} | ${Math.round(r.rps)} | ${r.p99.toFixed(2)} | ${r.errors}${r.sock ? ` (${r.sock})` : ''} | ${(r.rps / ngx).toFixed(2)}x | ${(r.rps / best).toFixed(2)}x | ${Number.isNaN(r.cpuUs) ? '–' : r.cpuUs.toFixed(1)} |`,
    );
  }
}
