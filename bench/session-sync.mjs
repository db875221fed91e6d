// Session-sync bench. Needs `npx tsc -b apps/l4-node` and a Redis (REDIS_URL, default redis://127.0.0.1:6379).
//
// 1. end to end: two l4-node processes (dist/main.js) with one UDP listener, sync and persistence on; new
//    flows (a fresh client socket and address each) through node A at increasing rates; per step: entries
//    (flow + persistence) published by A and applied by B per second, and B's apply lag p50/p99 (creation on A → in B's table; from B's lag histogram).
// 2. component: one SessionSync publishing at increasing rates, one applying in another process; exact lag.
//
// usage: node bench/session-sync.mjs [STEP_SECONDS=2]   Prints one JSON line per step.
// IDLE_SCOPES=N: the component receiver also follows N listeners that publish nothing (a node hosting a fleet);
// each step then says the receiver's CPU and Redis's, per second. ONLY=component skips the end-to-end part.
import { fork, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.mjs';
import { nodeArgs } from './node-args.mjs';

const root = fileURLToPath(new URL('../', import.meta.url));
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const STEP_S = Number(process.argv[2] ?? 2);
const IDLE_SCOPES = Number(process.env.IDLE_SCOPES ?? 0);
const { Redis } = await import(join(root, 'node_modules/ioredis/built/index.js'));
const { SessionSync } = await import(join(root, 'packages/node-runtime/dist/index.js'));
const { Registry } = await import(join(root, 'node_modules/prom-client/index.js'));
const silent = { info() {}, warn() {}, error() {}, debug() {} };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

if (process.env.BENCH_RECEIVER) {
  // Component receiver: applies entries and reports exact lags on request.
  let lags = [];
  const sync = new SessionSync({
    url: REDIS_URL,
    prefix: process.env.BENCH_PREFIX,
    nodeId: 'recv',
    logger: silent,
    registry: new Registry(),
  });
  const ch = sync.attach(
    { tenantId: 't', listenerId: 'l' },
    {
      apply(e, now) {
        lags.push(now - e.at);
        return true;
      },
      dump: () => [],
      sizes: () => ({}),
    },
  );
  // Listeners with nothing to sync beside the busy one, as on a node hosting a fleet.
  const idle = Array.from({ length: IDLE_SCOPES }, (_, i) =>
    sync.attach({ tenantId: 't', listenerId: `idle-${i}` }, { apply: () => true, dump: () => [], sizes: () => ({}) }),
  );
  await Promise.all([ch.ready, ...idle.map((c) => c.ready)]);
  process.send({ ready: true });
  process.on('message', async (m) => {
    if (m === 'take') {
      process.send({ lags, cpuMs: process.cpuUsage().user / 1000 + process.cpuUsage().system / 1000 });
      lags = [];
    } else if (m === 'exit') {
      await sync.close();
      process.exit(0);
    }
  });
}

function quantile(sorted, q) {
  return sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** Parses the Prometheus text into { name{labels}: value }. */
async function scrape(port) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const out = new Map();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}
const sum = (m, prefix) => [...m].filter(([k]) => k.startsWith(prefix)).reduce((a, [, v]) => a + v, 0);

/** p-quantile (ms) from the deltas of a cumulative histogram, linear within a bucket. */
function histQuantile(before, after, name, q) {
  const buckets = [...after]
    .filter(([k]) => k.startsWith(`${name}_bucket`))
    .map(([k, v]) => [Number(k.match(/le="([^"]+)"/)[1]), v - (before.get(k) ?? 0)])
    .sort((a, b) => a[0] - b[0]);
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total === 0) return null;
  let prevLe = 0;
  let prevN = 0;
  for (const [le, n] of buckets) {
    if (n >= q * total) {
      if (le === Number.POSITIVE_INFINITY) return `>${prevLe * 1000}`;
      return +((prevLe + ((le - prevLe) * (q * total - prevN)) / Math.max(1, n - prevN)) * 1000).toFixed(1);
    }
    prevLe = le;
    prevN = n;
  }
  return null;
}

function startNode(file, env) {
  const child = spawn(process.execPath, [...nodeArgs, join(root, 'apps/l4-node/dist/main.js'), '--config', file], {
    env: { ...process.env, SLB_METRICS_PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let buf = '';
  const metricsPort = new Promise((resolve) => {
    child.stdout.on('data', (d) => {
      buf += d;
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const l = JSON.parse(buf.slice(0, i));
        buf = buf.slice(i + 1);
        if (l.msg === 'metrics listening') resolve(l.metricsPort);
      }
    });
  });
  process.on('exit', () => child.kill('SIGKILL'));
  return { child, metricsPort };
}

async function endToEnd(prefix) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-sync-'));
  const echo = dgram.createSocket('udp4');
  echo.on('message', (m, r) => echo.send(m, r.port, r.address));
  echo.bind(0, '127.0.0.1');
  await once(echo, 'listening');
  const rid = (p, n) => `${p}-${n.toString(36).padStart(20, '0')}`;
  const ports = [await freePort(), await freePort()];
  const nodes = [];
  for (const [i, port] of ports.entries()) {
    const file = join(dir, `n${i}.json`);
    const listener = {
      id: rid('lsn', 1),
      loadBalancerId: rid('lb', 1),
      tenantId: rid('tnt', 1),
      protocol: 'udp',
      port,
      bindAddresses: ['127.0.0.1'],
      scheduler: 'sch',
      // Every new flow comes from a new client address, so it publishes two entries: the flow and the
      // client's persistence. A 1 s idle timeout keeps live flows (one upstream socket each) under the
      // node's flow bound and the fd limit at the highest rate.
      persistenceTimeout: 30,
      proxyProtocol: 'off',
      connectionDrainTimeout: 0,
      idleTimeout: 1,
      sessionSync: true,
      backends: [
        { serverId: rid('srv', 1), address: '127.0.0.1', port: echo.address().port, weight: 10, healthy: true },
      ],
    };
    writeFileSync(
      file,
      JSON.stringify({ version: 1, generatedAt: '2026-11-30T00:00:00Z', listeners: [listener], l7Nodes: [] }),
    );
    nodes.push(
      startNode(file, {
        SLB_SESSION_SYNC_REDIS_URL: REDIS_URL,
        SLB_SESSION_SYNC_PREFIX: prefix,
        SLB_NODE_ID: `bench-${i}`,
      }),
    );
  }
  const [mA, mB] = await Promise.all(nodes.map((n) => n.metricsPort));
  await sleep(500);
  const results = [];
  let seq = 0;
  for (const rate of [2_000, 5_000, 10_000, 12_500]) {
    const a0 = await scrape(mA);
    const b0 = await scrape(mB);
    const t0 = performance.now();
    let sent = 0;
    // Every 10 ms, open the flows due so far: a fresh client socket each (a new source port), one datagram.
    while (performance.now() - t0 < STEP_S * 1000) {
      const due = Math.floor(((performance.now() - t0) / 1000) * rate);
      for (; sent < due; sent++) {
        const s = dgram.createSocket('udp4');
        s.on('error', () => {});
        // A client address never used before in this run, so its persistence entry is new too.
        s.bind(0, `127.${10 + Math.floor(seq / 64_516)}.${Math.floor((seq % 64_516) / 254)}.${1 + (seq % 254)}`);
        seq++;
        s.send('x', ports[0], '127.0.0.1', () => setTimeout(() => s.close(), 50));
      }
      await sleep(10);
    }
    const elapsed = (performance.now() - t0) / 1000;
    // Let the tail drain, then read both nodes.
    let a1;
    let b1;
    for (let i = 0; i < 40; i++) {
      await sleep(50);
      a1 = await scrape(mA);
      b1 = await scrape(mB);
      if (
        sum(b1, 'slb_session_sync_applied_total') - sum(b0, 'slb_session_sync_applied_total') >=
        sum(a1, 'slb_session_sync_published_total') - sum(a0, 'slb_session_sync_published_total')
      )
        break;
    }
    const published = sum(a1, 'slb_session_sync_published_total') - sum(a0, 'slb_session_sync_published_total');
    const applied = sum(b1, 'slb_session_sync_applied_total') - sum(b0, 'slb_session_sync_applied_total');
    const flows = sum(a1, 'slb_l4_connections_total') - sum(a0, 'slb_l4_connections_total');
    const r = {
      test: 'e2e two l4 nodes, new UDP flows via A',
      target_flows_per_s: rate,
      offered_per_s: Math.round(sent / elapsed),
      flows_opened_per_s: Math.round(flows / elapsed),
      entries_published_per_s: Math.round(published / elapsed),
      entries_applied_per_s: Math.round(applied / elapsed),
      lag_p50_ms: histQuantile(b0, b1, 'slb_session_sync_apply_lag_seconds', 0.5),
      lag_p99_ms: histQuantile(b0, b1, 'slb_session_sync_apply_lag_seconds', 0.99),
      unpublished: sum(a1, 'slb_session_sync_unpublished_total') - sum(a0, 'slb_session_sync_unpublished_total'),
    };
    console.log(JSON.stringify(r));
    results.push(r);
    await sleep(300);
  }
  for (const n of nodes) n.child.kill('SIGKILL');
  echo.close();
  rmSync(dir, { recursive: true, force: true });
  return results;
}

async function component(prefix) {
  const recv = fork(fileURLToPath(import.meta.url), [], {
    env: { ...process.env, BENCH_RECEIVER: '1', BENCH_PREFIX: prefix },
  });
  await once(recv, 'message');
  const sync = new SessionSync({ url: REDIS_URL, prefix, nodeId: 'pub', logger: silent, registry: new Registry() });
  const ch = sync.attach({ tenantId: 't', listenerId: 'l' }, { apply: () => true, dump: () => [], sizes: () => ({}) });
  await ch.ready;
  const redis = new Redis(REDIS_URL);
  /** Redis's CPU seconds so far (user + sys), from INFO. */
  const redisCpu = async () => {
    const info = await redis.info('cpu');
    return Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1]);
  };
  const receiverCpuMs = async () => {
    recv.send('take');
    const [m] = await once(recv, 'message');
    return m.cpuMs;
  };
  let seq = 0;
  for (const rate of [1_000, 20_000, 50_000, 100_000]) {
    const cpu0 = { recv: await receiverCpuMs(), redis: await redisCpu() };
    const t0 = performance.now();
    let sent = 0;
    while (performance.now() - t0 < STEP_S * 1000) {
      const due = Math.floor(((performance.now() - t0) / 1000) * rate);
      for (; sent < due; sent++, seq++)
        ch.publish(
          'flow',
          `10.${(seq >> 16) & 255}.${(seq >> 8) & 255}.${seq & 255}|${seq & 65535}`,
          'srv-000000000000000000001',
          30_000,
        );
      await sleep(2);
    }
    const elapsed = (performance.now() - t0) / 1000;
    let lags = [];
    for (let i = 0; i < 40 && lags.length < sent; i++) {
      await sleep(50);
      recv.send('take');
      const [m] = await once(recv, 'message');
      lags = lags.concat(m.lags);
    }
    lags.sort((a, b) => a - b);
    const spent = (performance.now() - t0) / 1000;
    const recvCpu = (m) => m.cpuMs - cpu0.recv;
    recv.send('take');
    const [last] = await once(recv, 'message');
    lags = lags.concat(last.lags).sort((a, b) => a - b);
    const redisCpuS = (await redisCpu()) - cpu0.redis;
    console.log(
      JSON.stringify({
        test: 'component SessionSync → SessionSync (separate processes)',
        idle_scopes: IDLE_SCOPES,
        target_entries_per_s: rate,
        published_per_s: Math.round(sent / elapsed),
        applied: lags.length,
        applied_per_s: Math.round(lags.length / elapsed),
        lag_p50_ms: quantile(lags, 0.5),
        lag_p99_ms: quantile(lags, 0.99),
        receiver_cpu_pct: +(recvCpu(last) / 10 / spent).toFixed(1),
        redis_cpu_pct: +((redisCpuS * 100) / spent).toFixed(1),
      }),
    );
  }
  await sync.close();
  await redis.quit();
  recv.send('exit');
}

async function main() {
  const prefix = `bench-${randomUUID()}`;
  try {
    if (process.env.ONLY !== 'component') await endToEnd(`${prefix}-e2e`);
    await component(`${prefix}-c`);
  } finally {
    const r = new Redis(REDIS_URL);
    const keys = await r.keys(`${prefix}*`);
    if (keys.length > 0) await r.del(...keys);
    await r.quit();
  }
}

if (!process.env.BENCH_RECEIVER) await main();
