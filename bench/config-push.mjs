#!/usr/bin/env node
// Time from an API write to every node's ack, at fleet scale, with real processes on loopback.
//   npm run build && node bench/config-push.mjs        (LBS=1000 LISTENERS=4 SERVERS=10 L4=4 WRITES=200)
// Prints p50/p99 write→converged, the full snapshot size and the nodes' apply times.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deleteRedisKeys as deleteKeys } from '@slb/test-support/redis-keys';
import { freePort } from './free-port.mjs';
import { nodeArgs } from './node-args.mjs';

const LBS = Number(process.env.LBS ?? 1000);
const LISTENERS = Number(process.env.LISTENERS ?? 4);
const SERVERS = Number(process.env.SERVERS ?? 10);
const L4 = Number(process.env.L4 ?? 4);
const L7 = Number(process.env.L7 ?? 4);
const WRITES = Number(process.env.WRITES ?? 200);
const FIRST_PORT = 30000;
const root = fileURLToPath(new URL('..', import.meta.url));
const ADMIN = 'bench-admin-token-0123456789';
const NODE_TOKEN = 'bench-node-token-0123456789';
const dir = mkdtempSync(join(tmpdir(), 'slb-config-push-'));
// Its own health queue and Redis prefixes, deleted at the end: the shared Redis keeps nothing of a run.
const runId = `bench-config-push-${process.pid}-${Date.now()}`;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const children = [];

function start(name, script, env, args = []) {
  // PROFILE_DIR=dir: every process writes a CPU profile there when the bench stops it, and window.json holds
  // the measured phase on the profiles' clock (µs).
  const prof = process.env.PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROFILE_DIR}`] : [];
  const child = spawn(process.execPath, [...prof, ...args, script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = [];
  let partial = '';
  child.stdout.on('data', (d) => {
    const parts = (partial + d.toString()).split('\n');
    partial = parts.pop(); // a line cut across chunks waits for its end
    lines.push(...parts.filter(Boolean));
  });
  children.push(child);
  return { child, lines, name };
}

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

const apiPort = await freePort();
const api = `http://127.0.0.1:${apiPort}`;
const headers = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
const call = async (method, path, body) => {
  const res = await fetch(`${api}${path}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
};

try {
  start('api', join(root, 'apps/api/dist/main.js'), {
    PORT: String(apiPort),
    SLB_DB_PATH: join(dir, 'slb.db'),
    SLB_ADMIN_TOKEN: ADMIN,
    // Nodes join with the shared token (enrolled on joining): enrollment is not what is measured here.
    SLB_NODE_TOKEN: NODE_TOKEN,
    SLB_LEGACY_NODE_TOKEN: '1',
    SLB_DNS_PORT: '0',
    SLB_HEALTH_QUEUE: runId,
    SLB_HEALTH_KEY_PREFIX: `${runId}:health`,
    SLB_RATE_LIMIT_RPS: '0',
    SLB_DEFAULT_BACKEND_NETWORKS: '127.0.0.0/8', // the bench's backends are on loopback
    LOG_LEVEL: 'warn',
  });
  for (
    let i = 0;
    i < 100 &&
    !(await fetch(`${api}/healthz`).then(
      (r) => r.ok,
      () => false,
    ));
    i++
  )
    await new Promise((r) => setTimeout(r, 100));

  console.error(`seeding ${LBS} LBs × ${LISTENERS} listeners × ${SERVERS} servers …`);
  const t0 = Date.now();
  const lbs = [];
  for (let i = 0; i < LBS; i++) {
    const lb = await call('POST', '/v1/load-balancers', { name: `lb${i}` });
    const sg = await call('POST', `/v1/load-balancers/${lb.id}/server-groups`, {
      name: 'pool',
      servers: Array.from({ length: SERVERS }, (_, s) => ({ address: '127.0.0.1', port: 40000 + s })),
    });
    for (let l = 0; l < LISTENERS; l++) {
      await call('POST', `/v1/load-balancers/${lb.id}/listeners`, {
        // One listener in four is HTTP, so the L7 nodes carry a share of the fleet too.
        protocol: l === 3 ? 'http' : 'tcp',
        port: FIRST_PORT + i * LISTENERS + l,
        serverGroupId: sg.id,
      });
    }
    lbs.push({ id: lb.id, sgId: sg.id, servers: sg.servers.map((s) => s.id) });
    if (i % 100 === 99) console.error(`  ${i + 1} LBs (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }

  const nodes = [];
  const joinStart = Date.now();
  for (let n = 0; n < L4; n++) {
    nodes.push(
      start(
        `l4-${n}`,
        join(root, 'apps/l4-node/dist/main.js'),
        {
          SLB_API_URL: api,
          SLB_NODE_TOKEN: NODE_TOKEN,
          SLB_NODE_ID: `bench-l4-${n}`,
          SLB_NODE_ADDRESS: `127.0.0.${31 + n}`,
          ...(process.env.SYNC === 'off' ? { SLB_SESSION_SYNC_REDIS_URL: 'off' } : {}),
          SLB_STATE_DIR: join(dir, `node-${n}`),
          SLB_SESSION_SYNC_PREFIX: `${runId}:sync`,
          SLB_METRICS_PORT: '0',
          LOG_LEVEL: 'info',
        },
        nodeArgs,
      ),
    );
  }
  for (let n = 0; n < L7; n++) {
    nodes.push(
      start(
        `l7-${n}`,
        join(root, 'apps/l7-node/dist/main.js'),
        {
          SLB_API_URL: api,
          SLB_NODE_TOKEN: NODE_TOKEN,
          SLB_NODE_ID: `bench-l7-${n}`,
          SLB_NODE_ADDRESS: `127.0.0.${41 + n}`,
          SLB_STATE_DIR: join(dir, `node-l7-${n}`),
          SLB_SESSION_SYNC_PREFIX: `${runId}:sync`,
          SLB_METRICS_PORT: '0',
          LOG_LEVEL: 'info',
        },
        nodeArgs,
      ),
    );
  }
  const converged = async (lbId, version) => {
    const lb = await call('GET', `/v1/load-balancers/${lbId}`);
    return lb.status === 'active' && lb.configVersion >= version && lb.nodes.length === L4 + L7;
  };
  while (!(await converged(lbs.at(-1).id, 1))) {
    if (Date.now() - joinStart > 120_000) throw new Error('nodes did not converge within 120 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  const joinMs = Date.now() - joinStart;
  // A node acks before it logs the apply, and a node busy loading its session-sync scopes can take a while
  // to get the line out: wait for every L4 node's line rather than a fixed time.
  const fullApplies = () =>
    nodes.flatMap((n) =>
      n.lines
        .filter((l) => l.includes('"config applied"'))
        .map((l) => JSON.parse(l))
        .filter((l) => typeof l.applyMs === 'number' && l.listeners >= LBS * LISTENERS)
        .map((l) => l.applyMs),
    );
  for (let i = 0; i < 100 && fullApplies().length < L4; i++) await new Promise((r) => setTimeout(r, 100));
  const applyTimes = fullApplies();
  if (applyTimes.length === 0)
    console.error('no apply lines; node output:', nodes[0].lines.length, nodes[0].lines.slice(0, 5).join('\n'));
  const saved = join(dir, 'node-0', 'last-known-good.json');
  for (let i = 0; i < 100 && !existsSync(saved); i++) await new Promise((r) => setTimeout(r, 100));
  const snapshotBytes = statSync(saved).size;

  // Writes are measured on a settled fleet: right after the join every node is still saving its 4 MiB
  // snapshot, loading session-sync scopes and collecting the garbage of the full apply, which is join cost.
  const SETTLE_MS = Number(process.env.SETTLE_MS ?? 5000);
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  console.error(`measuring ${WRITES} weight changes (after ${SETTLE_MS} ms of settling) …`);
  const latencies = [];
  const measureFrom = process.hrtime.bigint() / 1000n; // µs on the monotonic clock CPU profiles use
  for (let w = 0; w < WRITES; w++) {
    const lb = lbs[(w * 7919) % lbs.length];
    const srv = lb.servers[w % lb.servers.length];
    const started = performance.now();
    const server = await call('PATCH', `/v1/load-balancers/${lb.id}/server-groups/${lb.sgId}/servers/${srv}`, {
      weight: 1 + (w % 100),
    });
    const { configVersion } = await call('GET', `/v1/load-balancers/${lb.id}`);
    while (!(await converged(lb.id, configVersion))) {
      if (performance.now() - started > 10_000) throw new Error('a write did not converge within 10 s');
      // Poll every 5 ms: finer polling measured the bench's own load on the API (thousands of GETs a
      // second on a 2-core machine) more than the push, for a granularity the 100 ms goal does not need.
      await new Promise((r) => setTimeout(r, 5));
    }
    latencies.push(performance.now() - started);
    void server;
  }
  if (process.env.PROFILE_DIR) {
    const window = { from: Number(measureFrom), to: Number(process.hrtime.bigint() / 1000n) };
    writeFileSync(join(process.env.PROFILE_DIR, 'window.json'), JSON.stringify(window));
  }
  await new Promise((r) => setTimeout(r, 200));
  const deltaApply = (prefix) =>
    nodes
      .filter((n) => n.name.startsWith(prefix))
      .flatMap((n) => n.lines.filter((l) => l.includes('"config applied"')).map((l) => JSON.parse(l)))
      .filter((l) => typeof l.applyMs === 'number')
      .map((l) => l.applyMs)
      .slice(1); // the first is the full snapshot
  const fmt = (ms) => `${ms.toFixed(1)} ms`;
  console.log(`\nconfig push: ${L4} L4 + ${L7} L7 nodes, ${LBS} LBs × ${LISTENERS} listeners × ${SERVERS} servers`);
  console.log(`  nodes joined and applied the full snapshot in ${fmt(joinMs)}`);
  console.log(
    `  full snapshot: ${(snapshotBytes / 1024).toFixed(0)} KiB; apply on the node p50 ${fmt(percentile(applyTimes, 50))}, max ${fmt(Math.max(...applyTimes))}`,
  );
  for (const kind of ['l4', 'l7']) {
    const times = deltaApply(kind);
    if (times.length > 0)
      console.log(
        `  ${kind} node apply of one change: p50 ${fmt(percentile(times, 50))}, p99 ${fmt(percentile(times, 99))}`,
      );
  }
  console.log(
    `  write → every node acked (${WRITES} writes): p50 ${fmt(percentile(latencies, 50))}, p99 ${fmt(percentile(latencies, 99))}   goal p99 <= 100 ms`,
  );
} finally {
  // SIGTERM first, so profiled processes can write their profiles.
  for (const c of children) c.kill(process.env.PROFILE_DIR ? 'SIGINT' : 'SIGKILL');
  if (process.env.PROFILE_DIR) await new Promise((r) => setTimeout(r, 8000));
  rmSync(dir, { recursive: true, force: true });
  await deleteRedisKeys();
}

function deleteRedisKeys() {
  return deleteKeys(REDIS_URL, [`bull:${runId}:*`, `${runId}:*`]);
}
