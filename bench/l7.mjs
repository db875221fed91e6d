#!/usr/bin/env node
// L7 node benchmark, loopback only: one wrk run per target, printed as ratios measured in the same run.
//
//   node bench/l7.mjs                 # direct, l7-node (fast path on and off), nginx, haproxy, node:http+undici,
//                                     # http-proxy, and the full L4 → L7 path; small (`ok`) and 16 KiB bodies.
//                                     # DUR=5 s per run, WARM=4 s warm-up per target and body (JITs need it).
//   ROUNDS=3 node bench/l7.mjs        # targets interleaved in rounds, best round of each, and the goals judged on
//                                     # the median of same-round ratios too (default 1; ~4 min each)
//   L7_BASELINE=../other node bench/l7.mjs  # also the l7-node of another (built) checkout, e.g. main before a change
//   node bench/l7.mjs --serve LISTEN UPSTREAM
//                                     # foreground l7-node proxying 127.0.0.1:LISTEN → 127.0.0.1:UPSTREAM,
//                                     # for ../shared/bench/anchors.sh EXTRA_L7
//
// Layout as ../shared/bench/anchors.sh: wrk (-t2 -c64) and the nginx backend on the first CPU this process may
// use, the proxy under test alone on the second (nginx 1 worker, haproxy nbthread 1, one node process); without
// taskset or a second CPU nothing is pinned, and the header says so. In the L4 → L7 row both nodes share the
// proxy CPU. The l7-node runs with LOG_LEVEL=warn (no access log), as nginx/haproxy run with access logs off.
// Needs nginx (the backend) and wrk; haproxy and the npm package http-proxy (HTTP_PROXY_DIR, a folder whose
// node_modules has it) are references whose rows are skipped, and named, when missing. As root it first
// apt-get installs nginx-light, haproxy and wrk when missing. Every process it starts is stopped by PID on exit.
//
// Every row prints the load side's CPU (wrk, from this process's reaped-children time, plus the backend) and the
// target's (from /proc over the row's window), each core's busy % (foreign load shows there) and the load
// average. A row whose load side used ≥ 90% of its core while the target did not is `generator-limited`: its
// req/s is wrk's ceiling. Only rows whose target saturated its core compare by req/s; any other comparison
// divides CPU µs per request instead (labelled `by CPU/req`), which a busy shared machine disturbs far less.
// The l7-node rows print their goals (issue #22): ≥ 0.8× nginx and ≥ 2× the best plain Node proxy.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  bottleneck,
  compare,
  compareWithBest,
  cpuMicrosPer,
  cpuPercent,
  parseCpuList,
  planPinning,
  sameRoundRatios,
  verdict,
} from './bench-verdict.mjs';
import { id, l7Snapshot } from './file-mode-snapshots.mjs';
import { waitPort } from './free-port.mjs';
import { have } from './have-command.mjs';
import { nodeArgs } from './node-args.mjs';
import { allowedCpuList, coreBusy, coreTicks, cpuSeconds, reapedChildrenCpuSeconds } from './proc-cpu.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const L7_MAIN = join(ROOT, 'apps/l7-node/dist/main.js');
const L4_MAIN = join(ROOT, 'apps/l4-node/dist/main.js');
// The reference proxies' scripts: ../shared/bench beside the main checkout, two levels up from a worktree.
const SHARED =
  process.env.SHARED_BENCH ??
  [join(ROOT, '../shared/bench'), join(ROOT, '../../shared/bench')].find((d) => existsSync(d)) ??
  join(ROOT, '../shared/bench');
const ROUNDS = Number(process.env.ROUNDS ?? 1);
const DUR = Number(process.env.DUR ?? 5);
const WARM = Number(process.env.WARM ?? 4);
const GOALS = { nginx: { min: 0.8 }, node: { min: 2 } };
// Set by main(): the load CPU and the proxy CPU (null: not pinned), the CPUs shown, and how many cores each side
// may use (the generator-limited threshold scales with them).
let LOAD_CPU = null;
let PROXY_CPU = null;
let CPUS = [];
let loadCores = 1;
let targetCores = 1;
/** The nginx backend, on the load CPU: its CPU counts with wrk's as the load side's. */
let backend;
const work = mkdtempSync(join(tmpdir(), 'bench-l7-'));
const children = [];

/** cpu null: the child keeps this process's affinity (whatever pin the caller gave it). */
function start(name, cpu, cmd, args, env = process.env) {
  const [file, argv] = cpu === null ? [cmd, args] : ['taskset', ['-c', cpu, cmd, ...args]];
  const c = spawn(file, argv, { env, stdio: ['ignore', 'ignore', 'inherit'] });
  c.name = name;
  children.push(c);
  return c;
}

function startL7(name, proxyPort, directPort, upstream, cpu, env = {}, main = L7_MAIN) {
  const file = join(work, `${name}.json`);
  writeFileSync(file, JSON.stringify(l7Snapshot(proxyPort, directPort, upstream)));
  return start(name, cpu, process.execPath, [...nodeArgs, main, '--config', file], {
    ...process.env,
    LOG_LEVEL: process.env.L7_LOG_LEVEL ?? 'warn',
    SLB_METRICS_PORT: '0',
    ...env,
  });
}

if (process.argv[2] === '--serve') {
  const listen = Number(process.argv[3]);
  const upstream = Number(process.argv[4]);
  // PROXY v2 port one above the plain port the harness dials. No taskset: the node keeps the caller's pin.
  const child = startL7('serve', listen + 1, listen, upstream, null);
  const stop = () => child.kill('SIGTERM');
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  child.on('exit', (code) => {
    rmSync(work, { recursive: true, force: true });
    process.exit(code ?? 0);
  });
} else {
  await main();
  // The proxies are children: without this the bench would wait on them forever ('exit' stops them).
  process.exit(0);
}

function cleanup() {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
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

/** wrk's command line on the load CPU (or unpinned). */
function wrkCommand(args) {
  return LOAD_CPU === null ? ['wrk', args] : ['taskset', ['-c', LOAD_CPU, 'wrk', ...args]];
}

function warmUp(port, path) {
  execFileSync(...wrkCommand(['-t2', '-c64', `-d${WARM}s`, `http://127.0.0.1:${port}${path}`]), { stdio: 'ignore' });
}

/** One measured wrk run, with the CPU the load side (wrk + backend) and the target (procs) used meanwhile. */
function wrk(port, path, procs) {
  const t0 = performance.now();
  const ticks0 = coreTicks();
  const [wrk0, be0, target0] = [reapedChildrenCpuSeconds(), cpuSeconds([backend]), cpuSeconds(procs)];
  const out = execFileSync(
    ...wrkCommand(['-t2', '-c64', `-d${DUR}s`, '--latency', `http://127.0.0.1:${port}${path}`]),
    {
      encoding: 'utf8',
    },
  );
  const [wrk1, be1, target1] = [reapedChildrenCpuSeconds(), cpuSeconds([backend]), cpuSeconds(procs)];
  const wall = (performance.now() - t0) / 1000;
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
  const p99m = /99%\s+([\d.]+)(us|ms|s)/.exec(out);
  const p99 = p99m ? Number(p99m[1]) * (p99m[2] === 'us' ? 0.001 : p99m[2] === 's' ? 1000 : 1) : Number.NaN;
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const errs = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? '0';
  const sock = /Socket errors: (.*)/.exec(out)?.[1] ?? '';
  const wrkPct = cpuPercent(wrk1 - wrk0, wall);
  const backendPct = cpuPercent(be1 - be0, wall);
  const targetPct = procs.length === 0 ? Number.NaN : cpuPercent(target1 - target0, wall);
  return {
    rps,
    p99,
    errors: Number(errs),
    sock,
    wrkPct,
    backendPct,
    targetPct,
    limit: bottleneck({ loadPct: wrkPct + backendPct, loadCores, targetPct, targetCores }),
    cpuUs: procs.length === 0 ? Number.NaN : cpuMicrosPer(target1 - target0, requests),
    busy: coreBusy(ticks0, coreTicks(), CPUS),
    load1: loadavg()[0],
  };
}

async function main() {
  process.on('exit', cleanup);
  process.on('SIGINT', () => process.exit(130));
  const packages = { nginx: 'nginx-light', haproxy: 'haproxy', wrk: 'wrk' };
  const missing = Object.keys(packages).filter((c) => !have(c));
  if (missing.length > 0 && process.getuid?.() === 0) {
    console.error(`apt-get install ${missing.map((c) => packages[c]).join(' ')}`);
    try {
      execFileSync('apt-get', ['update', '-q'], { stdio: 'ignore' });
      execFileSync('apt-get', ['install', '-y', '-q', ...missing.map((c) => packages[c])], {
        stdio: 'ignore',
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      });
    } catch (e) {
      console.error(`apt-get failed (${e.message.split('\n')[0]}): measuring against what is installed`);
    }
  }
  for (const c of ['nginx', 'wrk']) {
    if (!have(c))
      throw new Error(`${c} is needed (${c === 'wrk' ? 'load generator' : 'backend'}): apt-get install ${packages[c]}`);
  }
  const skipped = [];
  if (!have('haproxy')) skipped.push('haproxy (not installed)');
  if (!process.env.HTTP_PROXY_DIR) skipped.push('node-http-proxy (HTTP_PROXY_DIR unset)');
  ({
    cpus: CPUS,
    loadCpu: LOAD_CPU,
    proxyCpu: PROXY_CPU,
    loadCores,
    targetCores,
  } = planPinning(parseCpuList(allowedCpuList()), have('taskset')));

  // nginx workers run as an unprivileged user: the (0700) temp folder must be readable.
  chmodSync(work, 0o755);
  const www = join(work, 'www');
  mkdirSync(www, { mode: 0o755 });
  writeFileSync(join(www, 'ok'), 'ok');
  writeFileSync(join(www, '16k'), Buffer.alloc(16384, 'x'));
  const BE = 19080;
  backend = startNginx(
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
  // Another checkout's build in the same rounds (L7_BASELINE=/path/to/checkout, built): a change's effect
  // read within one run, where the machine's drift hits both builds alike.
  if (process.env.L7_BASELINE) {
    const main = join(process.env.L7_BASELINE, 'apps/l7-node/dist/main.js');
    const baseline = startL7('l7node-baseline', 19095, 19094, BE, PROXY_CPU, {}, main);
    targets.push(['l7-node (L7_BASELINE)', 19094, [baseline]]);
  }
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
  if (have('haproxy'))
    writeFileSync(
      hap,
      `global\n  nbthread 1\n  maxconn 4096\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n  timeout http-keep-alive 60s\n  option http-keep-alive\n  option forwardfor\n  http-reuse always\nfrontend fe\n  bind 127.0.0.1:19082\n  default_backend be\nbackend be\n  server s1 127.0.0.1:${BE}\n`,
    );
  if (have('haproxy')) targets.push(['haproxy', 19082, [start('haproxy', PROXY_CPU, 'haproxy', ['-db', '-f', hap])]]);
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
    const l4node = start('l4node', PROXY_CPU, process.execPath, [...nodeArgs, L4_MAIN, '--config', l4file], {
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
  // round counts in the table, and with more than one round the goals are judged on same-round ratios too.
  const best = new Map();
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) {
    const rows = [];
    rounds.push(rows);
    for (const [name, port, procs] of targets) {
      for (const body of ['ok', '16k']) {
        // Each body warms up on its own: the 16k run exercises other code (body forwarding) than `ok`.
        if (round === 0) warmUp(port, `/${body}`);
        const r = wrk(port, `/${body}`, procs);
        const key = `${name} ${body}`;
        const row = { name, body, rate: r.rps, ...r };
        rows.push(row);
        if (!best.has(key) || r.rps > best.get(key).rps) best.set(key, row);
        process.stderr.write(
          `${ROUNDS > 1 ? `round ${round + 1}: ` : ''}${name} ${body}: ${Math.round(r.rps)} req/s p99 ${r.p99.toFixed(2)} ms, ` +
            `wrk ${pct(r.wrkPct)}% + backend ${pct(r.backendPct)}%, target ${pct(r.targetPct)}% (${r.limit}), ` +
            `CPUs ${CPUS.join('/')} busy ${r.busy}%, load ${r.load1.toFixed(2)}\n`,
        );
      }
    }
  }
  printTable([...best.values()], l4, skipped);
  if (ROUNDS > 1) printSameRound(rounds);
}

/**
 * The goals on the median of same-round ratios: a shared machine's speed moved by a quarter between rounds in
 * runs where the changes measured were a few percent, and the best round of each row can pair unlike spells.
 */
function printSameRound(rounds) {
  for (const body of ['ok', '16k']) {
    const inBody = rounds.map((rows) => rows.filter((x) => x.body === body));
    const isNode = (x) => x.name === 'l7-node';
    const n = sameRoundRatios(inBody, isNode, (x) => x.name === 'nginx');
    const p = sameRoundRatios(inBody, isNode, (x) => x.name.startsWith('node-'));
    if (n.ratios.length === 0) continue;
    const list = (r) => `rounds ${r.ratios.map((x) => x.toFixed(2)).join(', ')}`;
    const basis = (r) => (r.bases.every((b) => b === 'CPU per unit') ? 'CPU per unit' : 'throughput');
    console.log(
      `goal, ${body === 'ok' ? '2-byte' : '16 KiB'} body, median of ${n.ratios.length} same-round ratios: ` +
        `l7-node ${verdict(n.median, 'nginx', GOALS.nginx, basis(n), 'req')} (${list(n)}); ` +
        (p.ratios.length > 0
          ? `${verdict(p.median, 'best plain Node', GOALS.node, basis(p), 'req')} (${list(p)})`
          : 'n/a best plain Node'),
    );
  }
}

function pct(x) {
  return Number.isNaN(x) ? '–' : x.toFixed(0);
}

/** The ratio cell: with its goal for the l7-node rows, plain (but labelled by basis) for the others. */
function ratioCell(row, ref, what, goal) {
  if (!ref) return `n/a ${what}`;
  const cmp = compare(row, ref);
  if (row.name.startsWith('l7-node')) return verdict(cmp.ratio, what, goal, cmp.basis, 'req');
  return `${cmp.ratio.toFixed(2)}×${cmp.basis === 'CPU per unit' ? ' by CPU/req' : ''}`;
}

function printTable(rows, l4, skipped) {
  const layout =
    LOAD_CPU === null
      ? `nothing pinned (${CPUS.length} CPU(s), taskset ${have('taskset') ? 'present' : 'missing'})`
      : `wrk and the nginx backend on CPU ${LOAD_CPU}, each proxy alone on CPU ${PROXY_CPU}`;
  console.log(
    `\nL7 bench, wrk -t2 -c64 ${DUR}s after ${WARM}s warm-up${ROUNDS > 1 ? `, best of ${ROUNDS} rounds` : ''}; ${layout}` +
      `${l4 ? '' : '; no L4 row'}${skipped.length ? `; skipped: ${skipped.join(', ')}` : ''}`,
  );
  console.log(
    'Load CPU = wrk + backend, target CPU = the proxy process(es), in % of one core over the row; `generator-limited`: ' +
      `load ≥ 90% of its ${loadCores} core(s) while the target was below 90%; ` +
      '`unsaturated`: neither was (foreign load, latency). Ratios divide req/s when both rows were target-limited, ' +
      'else CPU µs/req (`by CPU/req`).\n',
  );
  console.log(
    `| target | body | req/s | p99 ms | errors | load CPU % (wrk+backend) | target CPU % | limited by | target CPU µs/req | vs nginx | vs best plain Node | CPU ${CPUS.join('/')} busy % | load avg |`,
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const nginx = rows.find((x) => x.name === 'nginx' && x.body === r.body);
    const peers = rows.filter((x) => x.body === r.body && x.name.startsWith('node-'));
    const isRef = r.name === 'direct' || r.name === 'nginx' || r.name === 'haproxy' || r.name.startsWith('node-');
    const vsNginx = r.name === 'nginx' || r.name === 'direct' ? '–' : ratioCell(r, nginx, 'nginx', GOALS.nginx);
    const bestPeer = compareWithBest(r, peers);
    const vsNode =
      isRef || !bestPeer
        ? '–'
        : r.name.startsWith('l7-node')
          ? verdict(bestPeer.ratio, `best plain Node (${bestPeer.name})`, GOALS.node, bestPeer.basis, 'req')
          : `${bestPeer.ratio.toFixed(2)}×${bestPeer.basis === 'CPU per unit' ? ' by CPU/req' : ''}`;
    console.log(
      `| ${r.name} | ${r.body} | ${Math.round(r.rps)} | ${r.p99.toFixed(2)} | ${r.errors}${r.sock ? ` (${r.sock})` : ''} | ` +
        `${pct(r.wrkPct + r.backendPct)} (${pct(r.wrkPct)}+${pct(r.backendPct)}) | ${pct(r.targetPct)} | ${r.limit} | ` +
        `${Number.isNaN(r.cpuUs) ? '–' : r.cpuUs.toFixed(1)} | ${vsNginx} | ${vsNode} | ${r.busy} | ${r.load1.toFixed(2)} |`,
    );
  }
  for (const body of ['ok', '16k']) {
    const node = rows.find((x) => x.name === 'l7-node' && x.body === body);
    if (!node) continue;
    const nginx = rows.find((x) => x.name === 'nginx' && x.body === body);
    const peer = compareWithBest(
      node,
      rows.filter((x) => x.body === body && x.name.startsWith('node-')),
    );
    const n = nginx ? compare(node, nginx) : { ratio: Number.NaN, basis: 'throughput' };
    console.log(
      `goal, ${body === 'ok' ? '2-byte' : '16 KiB'} body: l7-node ${verdict(n.ratio, 'nginx', GOALS.nginx, n.basis, 'req')}; ` +
        `${peer ? verdict(peer.ratio, `best plain Node (${peer.name})`, GOALS.node, peer.basis, 'req') : 'n/a best plain Node'}`,
    );
  }
}
