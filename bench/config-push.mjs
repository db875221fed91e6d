#!/usr/bin/env node
// Time from an API write to every node's ack, at fleet scale, with real processes on loopback, in up to three
// rows: SQLite with one API, PostgreSQL with one API, PostgreSQL with two API replicas on one database and one
// Redis (issue #23's goal: config push p99 with two replicas within 1.5× of one replica).
//   npm run build && node bench/config-push.mjs
// Defaults keep the run near 2 minutes on 2 cores: LBS=300 LISTENERS=4 SERVERS=10 L4=4 L7=4 WRITES=100 per row.
// The issue #22 size: LBS=1000 WRITES=200. ROWS=sqlite,pg,replicas picks rows; PG=0 skips the PostgreSQL ones
// (SLB_TEST_PG_URL, default 127.0.0.1:5432); each PostgreSQL row runs on a scratch database of its own.
//
// Replicas row: the writes go to replica A (ALTERNATE=1: to A and B in turn) and the nodes are split, every
// other node of each kind listing B first in its SLB_API_URL, so half the nodes hang on B and a write on A
// reaches them through Redis (A's `config-changed` signal, then B reads the LB again and pushes).
//
// Two clocks per write, both from the PATCH being sent:
// - every node acked: each node's own `config applied` line (logged right after it sent its ack; `time`, ms),
//   the last of them. The nodes a write reaches are every L7 node and the L4 nodes binding the LB's VIP (on
//   Node 20 VIPs are active-standby, and a standby L4 node holds none of the LB's listeners). Writes go one at a
//   time and each makes one delta per node it reaches; the row says so when a node applied more configs than
//   that (an apply the bench would take for a write's).
// - the API shows it: GET of the LB (every 5 ms, as before; on each replica in the replicas row) until it is
//   `active` at the write's configVersion with every node converged. A row whose LB the API never shows so
//   (within 2 s of the nodes' acks) prints what the API showed instead and keeps the first clock only.
// Each row prints the bench's own CPU (the load generator: its writes and polling) beside the APIs',
// PostgreSQL's (the backends of the row's database) and the nodes', each core's busy % and the load average:
// the machine is shared, and a row held back by something else says so.
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deleteRedisKeys } from '@slb/test-support/redis-keys';
import { createScratchDatabase, PG_ADMIN_URL, pgAnswers } from '../scripts/pg-scratch.mjs';
import { bottleneck, cpuPercent, quantile, SATURATED, verdict } from './bench-verdict.mjs';
import { freePort } from './free-port.mjs';
import { nodeArgs } from './node-args.mjs';
import { coreBusy, coreTicks, cpuSeconds } from './proc-cpu.mjs';

const LBS = Number(process.env.LBS ?? 300);
const LISTENERS = Number(process.env.LISTENERS ?? 4);
const SERVERS = Number(process.env.SERVERS ?? 10);
const L4 = Number(process.env.L4 ?? 4);
const L7 = Number(process.env.L7 ?? 4);
const WRITES = Number(process.env.WRITES ?? 100);
// LBs seeded at once (each one's calls in order): PostgreSQL's round trips overlap.
const SEED_CONCURRENCY = Number(process.env.SEED_CONCURRENCY ?? 4);
// Writes are measured on a settled fleet: right after the join every node is still saving its snapshot,
// loading session-sync scopes and collecting the garbage of the full apply, which is join cost.
const SETTLE_MS = Number(process.env.SETTLE_MS ?? 3000);
const ALTERNATE = process.env.ALTERNATE === '1';
const JOIN_TIMEOUT_MS = Number(process.env.JOIN_TIMEOUT_MS ?? 60_000);
const WRITE_TIMEOUT_MS = 10_000;
const VIEW_GRACE_MS = 2_000; // how long the API may lag the nodes' acks before its view counts as stuck
const JOIN_VIEW_MS = 5_000; // the same after the join
const MAX_TIMEOUTS = 3; // a row stops measuring after this many writes some node never applied
const ROWS = (process.env.ROWS ?? 'sqlite,pg,replicas').split(',').map((r) => r.trim());
const FIRST_PORT = 30000;
// One listener in four is HTTP, so the L7 nodes carry a share of the fleet too.
const isHttp = (l) => l % 4 === 3;
const HTTP_PER_LB = Array.from({ length: LISTENERS }, (_, l) => l).filter(isHttp).length;
const root = fileURLToPath(new URL('..', import.meta.url));
const ADMIN = 'bench-admin-token-0123456789';
const NODE_TOKEN = 'bench-node-token-0123456789';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const headers = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Every process this bench started and has not seen exit: each leads a process group of its own. */
const live = new Set();
let stopping = false; // Ctrl-C or SIGTERM: the children are gone, the row cleans up and the bench ends

function start(name, script, env, args = [], profileDir = undefined) {
  // PROFILE_DIR=dir: every process writes a CPU profile into dir/<row> when the bench stops it, and
  // window.json there holds the measured phase on the profiles' clock (µs).
  const prof = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const child = spawn(process.execPath, [...prof, ...args, script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true, // its own group, so a stop takes whatever it started too
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  // A node's applies as they are logged: `time` (epoch ms), the node's config version, listeners, applyMs.
  const applies = [];
  let partial = '';
  child.stdout.on('data', (d) => {
    const parts = (partial + d.toString()).split('\n');
    partial = parts.pop(); // a line cut across chunks waits for its end
    for (const line of parts) {
      if (!line.includes('"config applied"')) continue;
      const l = JSON.parse(line);
      if (typeof l.applyMs === 'number') applies.push(l);
    }
  });
  return { child, applies, name };
}

function signalGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // gone already
  }
}

/** Stops the children (SIGINT first when profiling, so they write their profiles) and waits for each exit. */
async function stopAll(children, graceful) {
  const exited = children.map((c) =>
    c.exitCode !== null || c.signalCode !== null ? null : new Promise((r) => c.once('exit', r)),
  );
  for (const c of children) signalGroup(c, graceful ? 'SIGINT' : 'SIGKILL');
  const all = Promise.all(exited.filter(Boolean));
  if (graceful) {
    await Promise.race([all, sleep(8000)]);
    for (const c of children) signalGroup(c, 'SIGKILL');
  }
  await Promise.race([all, sleep(5000)]);
}

// Nothing outlives the bench: an exception, Ctrl-C or SIGTERM still takes every child's group with it.
process.once('exit', () => {
  for (const c of live) signalGroup(c, 'SIGKILL');
});
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    for (const c of live) signalGroup(c, 'SIGKILL');
    process.exitCode = 130;
    stopping = true;
  });
}

const percentile = (values, p) => quantile(values, p / 100);
const fmt = (ms) => (Number.isFinite(ms) ? `${ms.toFixed(1)} ms` : '–');

async function call(base, method, path, body) {
  const res = await fetch(`${base}${path}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${base}${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** Waits until this API process (its instance id, not an orphan on the port) answers /healthz. */
async function waitHealthy(api, instance) {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(100)) {
    if (api.child.exitCode !== null || api.child.signalCode !== null) throw new Error(`${api.name} exited at start`);
    const ok = await fetch(`${api.url}/healthz`).then(
      (r) => r.ok && r.headers.get('slb-instance') === instance,
      () => false,
    );
    if (ok) return;
  }
  throw new Error(`${api.name} did not answer within 60 s`);
}

/** CPU seconds (user + system) one process has used, or undefined once it is gone. */
function processCpuSeconds(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return undefined;
  }
}

/**
 * CPU of the PostgreSQL backends serving one database (pg_stat_activity), sampled every 250 ms: the API's pool
 * opens and closes connections, so the backends at the end are not those at the start. Each backend counts from
 * its first sample (from its start if it opened meanwhile) to its last; a backend's last 250 ms before it
 * exits are lost. `stop()` gives the CPU seconds.
 */
async function databaseCpu(database) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 3_000 });
  await client.connect();
  const first = new Map();
  const last = new Map();
  let sampled = false;
  const sample = async () => {
    const { rows } = await client.query('SELECT pid FROM pg_stat_activity WHERE datname = $1', [database]);
    for (const { pid } of rows) {
      const cpu = processCpuSeconds(pid);
      if (cpu === undefined) continue;
      if (!first.has(pid)) first.set(pid, sampled ? 0 : cpu);
      last.set(pid, cpu);
    }
    sampled = true;
  };
  await sample();
  let running = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(sample).catch(() => {});
  }, 250);
  return {
    async stop() {
      clearInterval(timer);
      await running;
      await sample().catch(() => {});
      await client.end();
      let sum = 0;
      for (const [pid, cpu] of last) sum += cpu - first.get(pid);
      return sum;
    },
  };
}

/** Creates LBS LBs, each with a server group of SERVERS and LISTENERS listeners. */
async function seed(api) {
  console.error(`  seeding ${LBS} LBs × ${LISTENERS} listeners × ${SERVERS} servers …`);
  const t0 = Date.now();
  const lbs = new Array(LBS);
  let next = 0;
  let done = 0;
  const worker = async () => {
    for (let i = next++; i < LBS && !stopping; i = next++) {
      const lb = await call(api, 'POST', '/v1/load-balancers', { name: `lb${i}` });
      const sg = await call(api, 'POST', `/v1/load-balancers/${lb.id}/server-groups`, {
        name: 'pool',
        servers: Array.from({ length: SERVERS }, (_, s) => ({ address: '127.0.3.1', port: 40000 + s })),
      });
      for (let l = 0; l < LISTENERS; l++) {
        await call(api, 'POST', `/v1/load-balancers/${lb.id}/listeners`, {
          protocol: isHttp(l) ? 'http' : 'tcp',
          port: FIRST_PORT + i * LISTENERS + l,
          serverGroupId: sg.id,
        });
      }
      lbs[i] = { id: lb.id, sgId: sg.id, servers: sg.servers.map((s) => s.id) };
      if (++done % 100 === 0) console.error(`    ${done} LBs (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    }
  };
  await Promise.all(Array.from({ length: SEED_CONCURRENCY }, worker));
  if (stopping) throw new Error('stopped');
  return { lbs, seedMs: Date.now() - t0 };
}

/**
 * One row: its APIs (one, or replicas A and B on one PostgreSQL database), the fleet seeded through A, the
 * nodes joined, then WRITES weight changes, each timed to every node's ack and to the API showing it.
 */
async function runRow(row) {
  const dir = mkdtempSync(join(tmpdir(), `slb-config-push-${row.key}-`));
  // Its own health queue and Redis prefixes, deleted at the end with the cluster's keys: the shared Redis
  // keeps nothing of a run.
  const runId = `bench-config-push-${process.pid}-${Date.now()}-${row.key}`;
  const profileDir = process.env.PROFILE_DIR ? join(process.env.PROFILE_DIR, row.key) : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const children = [];
  const clusterIds = new Set();
  let database = null;
  try {
    if (row.engine === 'pg') database = await createScratchDatabase('slb_bench_push');
    const secretKey = Buffer.alloc(32, 7).toString('base64');
    const apis = [];
    for (let r = 0; r < row.replicas; r++) {
      const port = await freePort();
      const instance = randomUUID();
      const proc = start(
        `api-${'AB'[r]}`,
        join(root, 'apps/api/dist/main.js'),
        {
          PORT: String(port),
          SLB_DB_PATH: join(dir, database ? 'unused.db' : 'slb.db'),
          ...(database ? { SLB_DATABASE_URL: database.url } : {}),
          SLB_SECRET_KEY: secretKey, // every replica the same, as PostgreSQL requires
          SLB_INSTANCE_ID: instance,
          REDIS_URL,
          SLB_ADMIN_TOKEN: ADMIN,
          // Nodes join with the shared token (enrolled on joining): enrollment is not what is measured here.
          SLB_NODE_TOKEN: NODE_TOKEN,
          SLB_LEGACY_NODE_TOKEN: '1',
          SLB_DNS_PORT: '0',
          SLB_HEALTH_QUEUE: runId,
          SLB_HEALTH_KEY_PREFIX: `${runId}:health`,
          SLB_SESSION_SYNC_PREFIX: `${runId}:sync`,
          SLB_METRICS_KEY_PREFIX: `${runId}:metrics`,
          SLB_RATE_LIMIT_RPS: '0',
          SLB_DEFAULT_BACKEND_NETWORKS: '127.0.0.0/8', // the bench's backends are on loopback
          LOG_LEVEL: 'warn',
        },
        [],
        profileDir,
      );
      children.push(proc.child);
      const api = { ...proc, url: `http://127.0.0.1:${port}` };
      // One after the other: the first migrates the database, the second finds it migrated.
      await waitHealthy(api, instance);
      clusterIds.add((await call(api.url, 'GET', '/control/v1/namespace')).clusterId);
      apis.push(api);
    }
    const [a] = apis;
    const { lbs, seedMs } = await seed(a.url);

    // Node i of each kind hangs on replica i mod replicas: its SLB_API_URL lists that replica first.
    const nodes = [];
    const joinStart = Date.now();
    const urlsFrom = (r) => [...apis.slice(r), ...apis.slice(0, r)].map((x) => x.url).join(',');
    const addNode = (kind, n, env) => {
      const replica = n % apis.length;
      const proc = start(
        `${kind}-${n}`,
        join(root, `apps/${kind}-node/dist/main.js`),
        {
          ...env,
          SLB_API_URL: urlsFrom(replica),
          SLB_NODE_ID: `bench-${kind}-${n}`,
          SLB_NODE_TOKEN: NODE_TOKEN,
          SLB_SESSION_SYNC_PREFIX: `${runId}:sync`,
          SLB_METRICS_PORT: '0',
          LOG_LEVEL: 'info',
        },
        nodeArgs,
        profileDir,
      );
      children.push(proc.child);
      nodes.push({ ...proc, id: `bench-${kind}-${n}`, kind, replica, stateDir: env.SLB_STATE_DIR });
    };
    for (let n = 0; n < L4; n++) {
      addNode('l4', n, {
        SLB_NODE_ADDRESS: `127.0.0.${31 + n}`,
        SLB_STATE_DIR: join(dir, `node-${n}`),
        ...(process.env.SYNC === 'off' ? { SLB_SESSION_SYNC_REDIS_URL: 'off' } : {}),
      });
    }
    for (let n = 0; n < L7; n++) {
      addNode('l7', n, { SLB_NODE_ADDRESS: `127.0.0.${41 + n}`, SLB_STATE_DIR: join(dir, `node-l7-${n}`) });
    }
    const ownNodes = apis.map((_, r) => nodes.filter((n) => n.replica === r).map((n) => n.id));

    // Whether replica r shows the LB `active` at `version` or later, converged on each of its own nodes (and
    // on every other node it lists: a replica may show the nodes of the others too).
    const view = async (r, lbId, version) => {
      const lb = await call(apis[r].url, 'GET', `/v1/load-balancers/${lbId}`);
      const listed = new Set(lb.nodes.map((n) => n.nodeId));
      const ok =
        lb.status === 'active' &&
        lb.configVersion >= version &&
        ownNodes[r].every((id) => listed.has(id)) &&
        lb.nodes.every((n) => n.converged);
      return { r, ok, lb };
    };
    const views = async (lbId, version) => Promise.all(apis.map((_, r) => view(r, lbId, version)));
    // What replica r shows of an LB, for the report of a write or join that did not converge there.
    const describe = ({ r, lb }) =>
      `${apis[r].name} shows it ${lb.status} at configVersion ${lb.configVersion} on [` +
      lb.nodes
        .map((n) => {
          const state = [n.role, n.converged ? 'converged' : 'not converged', n.error].filter(Boolean).join(', ');
          return `${n.nodeId}: ${state}`;
        })
        .join('; ') +
      `] (connected to it: ${ownNodes[r].join(', ')})`;

    // Joined: the nodes applied the whole fleet (their own logs: every L7 node each HTTP listener, the L4 nodes
    // each listener at least once between them; on Node 20 the L4 nodes carry VIPs active-standby and a
    // standby node holds none of the LB's listeners), then quiet for 500 ms; then the API shows the last LB.
    const holds = (n) => n.applies.at(-1)?.listeners ?? 0;
    const joined = () =>
      nodes.every((n) => n.kind !== 'l7' || holds(n) >= LBS * HTTP_PER_LB) &&
      nodes.filter((n) => n.kind === 'l4').reduce((sum, n) => sum + holds(n), 0) >= LBS * LISTENERS;
    const lastApply = () => Math.max(...nodes.map((n) => n.applies.at(-1)?.time ?? 0));
    while (!joined() || Date.now() - lastApply() < 500) {
      if (Date.now() - joinStart > JOIN_TIMEOUT_MS) {
        const held = nodes.map((n) => `${n.id} ${holds(n)}`).join(', ');
        throw new Error(`the nodes did not apply the fleet within ${JOIN_TIMEOUT_MS / 1000} s (listeners: ${held})`);
      }
      if (stopping) throw new Error('stopped');
      await sleep(50);
    }
    const joinMs = lastApply() - joinStart;
    // Each node's largest apply: the whole of its share, in one snapshot.
    const fullApplies = nodes
      .map((n) => n.applies.reduce((a, b) => (b.listeners > (a?.listeners ?? 0) ? b : a), undefined))
      .filter(Boolean);
    const l4Listeners = nodes.filter((n) => n.kind === 'l4').map(holds);
    const lastLb = lbs.at(-1).id;
    let stuck = null; // what the API showed when it did not show a change the nodes had acked
    let joinViewMs = Number.NaN;
    for (const deadline = Date.now() + JOIN_VIEW_MS; ; await sleep(50)) {
      const seen = await views(lastLb, 1);
      if (seen.every((v) => v.ok)) {
        joinViewMs = Date.now() - joinStart;
        break;
      }
      if (Date.now() > deadline) {
        stuck = `after the join, ${JOIN_VIEW_MS} ms after every node applied the fleet: ${seen
          .filter((v) => !v.ok)
          .map(describe)
          .join('; ')}`;
        break;
      }
    }

    await sleep(SETTLE_MS);
    const savedBytes = nodes
      .map((n) => join(n.stateDir, 'last-known-good.json'))
      .map((f) => (existsSync(f) ? statSync(f).size : 0));
    const snapshotBytes = Math.max(...savedBytes); // the largest share's file
    console.error(`  measuring ${WRITES} weight changes (after ${SETTLE_MS} ms of settling) …`);
    const appliesBefore = nodes.map((n) => n.applies.length);
    const load0 = loadavg()[0];
    const own0 = process.cpuUsage();
    const pgCpu = database ? await databaseCpu(database.name) : null;
    const cpu0 = {
      apis: apis.map((x) => cpuSeconds([x.child])),
      nodes: cpuSeconds(nodes.map((n) => n.child)),
    };
    const cores0 = coreTicks();
    const wall0 = performance.now();
    const measureFrom = process.hrtime.bigint() / 1000n; // µs on the monotonic clock CPU profiles use
    const acked = []; // per write: the last node's ack, ms after the PATCH was sent
    const byReplica = apis.map(() => []); // per write: the last ack among each replica's own nodes
    const shown = []; // per write: the API showing it active and converged everywhere
    const timeouts = [];
    const expectedApplies = nodes.map(() => 0); // per node: the writes that reached it
    const weights = new Map(); // server id → the weight last written
    for (let w = 0; w < WRITES && timeouts.length < MAX_TIMEOUTS && !stopping; w++) {
      const lb = lbs[(w * 7919) % lbs.length];
      const srv = lb.servers[w % lb.servers.length];
      const to = ALTERNATE ? apis[w % apis.length] : a;
      const before = nodes.map((n) => n.applies.length);
      const sentAt = Date.now(); // the nodes' log `time` is on this clock, in ms
      const started = performance.now();
      // A weight the server does not have yet (100 at first): a write that changes nothing pushes nothing.
      let weight = 1 + (w % 99);
      if (weight === (weights.get(srv) ?? 100)) weight = (weight % 99) + 1;
      weights.set(srv, weight);
      await call(to.url, 'PATCH', `/v1/load-balancers/${lb.id}/server-groups/${lb.sgId}/servers/${srv}`, { weight });
      // The nodes the write reaches: every L7 node (each LB has an HTTP listener) and the L4 nodes binding its VIP
      // (a standby L4 node holds none of its listeners), as the replicas list them.
      const seenFirst = await views(lb.id, 0);
      const { configVersion } = seenFirst.find((v) => v.r === apis.indexOf(to)).lb;
      const hostIds = new Set(
        seenFirst.flatMap((v) => v.lb.nodes.filter((n) => n.kind === 'l7' || n.role === 'active').map((n) => n.nodeId)),
      );
      const hosts = nodes.flatMap((n, i) => (hostIds.has(n.id) ? [i] : []));
      for (const i of hosts) expectedApplies[i]++;
      let viewMs = stuck ? Number.NaN : null;
      let nodesAt = null;
      let last = [];
      for (;;) {
        const allAcked = hosts.every((i) => nodes[i].applies.length > before[i]);
        if (allAcked && nodesAt === null) nodesAt = performance.now();
        if (allAcked && viewMs !== null) break;
        // The API is polled until the nodes acked even where its view is known to be stuck, so each row
        // loads its API alike.
        last = await views(lb.id, configVersion);
        if (viewMs === null && last.every((v) => v.ok)) viewMs = performance.now() - started;
        const now = performance.now();
        if (allAcked && viewMs === null && now - nodesAt > VIEW_GRACE_MS) {
          stuck = `write ${w} (LB ${lb.id}, configVersion ${configVersion}, on ${to.name}), ${VIEW_GRACE_MS} ms after every node acked it: ${last
            .filter((v) => !v.ok)
            .map(describe)
            .join('; ')}`;
          break;
        }
        if (now - started > WRITE_TIMEOUT_MS || stopping) break;
        // Poll every 5 ms: finer polling measured the bench's own load on the API (thousands of GETs a
        // second on a 2-core machine) more than the push, for a granularity the 100 ms goal does not need.
        await sleep(5);
      }
      if (!hosts.every((i) => nodes[i].applies.length > before[i])) {
        const missing = hosts.filter((i) => nodes[i].applies.length === before[i]).map((i) => nodes[i].id);
        const seen = last.filter((v) => !v.ok).map(describe);
        timeouts.push(
          `write ${w} (LB ${lb.id}, configVersion ${configVersion}, on ${to.name}): no apply on ${missing.join(', ')}` +
            (seen.length > 0 ? `; ${seen.join('; ')}` : ''),
        );
        continue;
      }
      const ackMs = new Map(hosts.map((i) => [i, nodes[i].applies[before[i]].time - sentAt]));
      acked.push(Math.max(...ackMs.values()));
      for (const [r, list] of byReplica.entries()) {
        const own = hosts.filter((i) => nodes[i].replica === r).map((i) => ackMs.get(i));
        if (own.length > 0) list.push(Math.max(...own));
      }
      if (Number.isFinite(viewMs)) shown.push(viewMs);
    }
    const wall = (performance.now() - wall0) / 1000;
    if (profileDir) {
      const window = { from: Number(measureFrom), to: Number(process.hrtime.bigint() / 1000n) };
      writeFileSync(join(profileDir, 'window.json'), JSON.stringify(window));
    }
    const own = process.cpuUsage(own0);
    const cores1 = coreTicks();
    const pgSeconds = pgCpu ? await pgCpu.stop() : Number.NaN;
    const cpu = {
      gen: cpuPercent((own.user + own.system) / 1e6, wall),
      apis: apis.map((x, r) => cpuPercent(cpuSeconds([x.child]) - cpu0.apis[r], wall)),
      nodes: cpuPercent(cpuSeconds(nodes.map((n) => n.child)) - cpu0.nodes, wall),
      pg: cpuPercent(pgSeconds, wall),
      cores: coreBusy(cores0, cores1, [...cores1.keys()]),
    };
    const load1 = loadavg()[0];
    await sleep(200);
    const during = nodes.map((n, i) => n.applies.slice(appliesBefore[i]));
    const extra = during
      .map((list, i) => ({ id: nodes[i].id, extra: list.length - expectedApplies[i] }))
      .filter((x) => x.extra !== 0);
    const deltas = (kind) =>
      during.filter((_, i) => nodes[i].kind === kind).flatMap((list) => list.map((l) => l.applyMs));
    return {
      row,
      apis: apis.map((x) => x.name),
      ownNodes,
      seedMs,
      joinMs,
      joinViewMs,
      snapshotBytes,
      fullApplies,
      l4Listeners,
      deltas: { l4: deltas('l4'), l7: deltas('l7') },
      acked,
      byReplica,
      shown,
      stuck,
      timeouts,
      extra,
      writesPerSec: acked.length / wall,
      cpu,
      load: [load0, load1],
    };
  } finally {
    await stopAll(children, Boolean(profileDir));
    rmSync(dir, { recursive: true, force: true });
    await database?.drop().catch((err) => console.error(`  could not drop ${database.name}: ${err.message}`));
    await deleteRedisKeys(REDIS_URL, [`bull:${runId}:*`, `${runId}:*`, ...[...clusterIds].map((id) => `${id}:*`)]);
  }
}

function report(res) {
  const { row, cpu } = res;
  const pct = (x) => (Number.isFinite(x) ? `${x.toFixed(0)}%` : '–');
  const p = (list) => `p50 ${fmt(percentile(list, 50))}, p99 ${fmt(percentile(list, 99))}`;
  console.log(`\n${row.label}`);
  const split =
    res.apis.length > 1 ? ` (${res.apis.map((n, r) => `${res.ownNodes[r].length} on ${n}`).join(', ')})` : '';
  const full = res.fullApplies.map((l) => l.applyMs);
  console.log(
    `  seeded in ${(res.seedMs / 1000).toFixed(1)} s; ${L4} L4 + ${L7} L7 nodes${split} applied the fleet in ` +
      `${fmt(res.joinMs)}, the API showed it at ${fmt(res.joinViewMs)}; L4 listeners per node ${res.l4Listeners.join('/')}, ` +
      `largest saved snapshot ${(res.snapshotBytes / 1024).toFixed(0)} KiB, full apply p50 ${fmt(percentile(full, 50))}, max ${fmt(Math.max(...full))}`,
  );
  const applies = ['l4', 'l7'].filter((k) => res.deltas[k].length > 0).map((k) => `${k} ${p(res.deltas[k])}`);
  console.log(`  node apply of one change: ${applies.join('; ')}`);
  const to = res.apis.length > 1 ? (ALTERNATE ? ', to A and B in turn' : ', all to A') : '';
  const p99 = percentile(res.acked, 99);
  console.log(
    `  write → every node acked (${res.acked.length} writes${to}; the nodes' log clock, 1 ms): ${p(res.acked)}, ` +
      `${res.writesPerSec.toFixed(1)} writes/s   goal p99 ≤ 100 ms ${p99 <= 100 ? 'ok' : 'MISS'}`,
  );
  if (res.apis.length > 1) {
    const halves = res.byReplica.map(
      (list, r) => `${res.apis[r]}'s nodes ${p(list)}${r > 0 && !ALTERNATE ? ' (through Redis)' : ''}`,
    );
    console.log(`    by replica: ${halves.join('; ')}`);
  }
  if (res.shown.length > 0) console.log(`  write → the API shows it active on every node: ${p(res.shown)}`);
  if (res.stuck) console.log(`  THE API DID NOT SHOW IT: ${res.stuck}`);
  for (const t of res.timeouts) console.log(`  NOT APPLIED within ${WRITE_TIMEOUT_MS / 1000} s: ${t}`);
  if (res.timeouts.length >= MAX_TIMEOUTS)
    console.log(`  stopped after ${MAX_TIMEOUTS} writes some node never applied`);
  if (res.extra.length > 0)
    console.log(
      `  applies beyond one per write (an ack may be early): ${res.extra.map((x) => `${x.id} ${x.extra > 0 ? '+' : ''}${x.extra}`).join(', ')}`,
    );
  // Sequential writes saturate nothing by design; a process at its core's limit is what held the row back.
  const busiestApi = Math.max(...cpu.apis);
  // The API, the nodes, PostgreSQL and other sessions' work share the cores: all of them busy is a limit too.
  const machineFull = cpu.cores.split('/').every((c) => Number(c) >= SATURATED * 100);
  const limit = machineFull
    ? 'machine-limited: every core ≥ 90% busy'
    : bottleneck({ loadPct: cpu.gen, loadCores: 1, targetPct: busiestApi, targetCores: 1 });
  const apiCpu = cpu.apis.length > 1 ? cpu.apis.map((c, r) => `${res.apis[r]} ${pct(c)}`).join(', ') : pct(busiestApi);
  console.log(
    `  CPU over the writes: bench (load generator) ${pct(cpu.gen)}, API ${apiCpu}` +
      (row.engine === 'pg' ? `, PostgreSQL ${pct(cpu.pg)} (this database's backends)` : '') +
      `, nodes ${pct(cpu.nodes)} in all; cores busy ${cpu.cores}%; load ${res.load[0].toFixed(2)} → ${res.load[1].toFixed(2)} (${limit})`,
  );
}

const rows = [
  { key: 'sqlite', label: 'SQLite, one API', engine: 'sqlite', replicas: 1 },
  { key: 'pg', label: 'PostgreSQL, one API', engine: 'pg', replicas: 1 },
  { key: 'replicas', label: 'PostgreSQL, two API replicas (nodes split between them)', engine: 'pg', replicas: 2 },
].filter((r) => ROWS.includes(r.key));
if (L7 > 0 && HTTP_PER_LB === 0) throw new Error('L7 nodes need LISTENERS ≥ 4 (the fourth listener is HTTP)');
if (rows.some((r) => r.replicas > 1) && (L4 < 2 || L7 === 1))
  throw new Error('the replicas row needs L4 ≥ 2 and L7 ≠ 1: each replica gets half of each kind');
let pgSkip = null;
if (rows.some((r) => r.engine === 'pg')) {
  if (process.env.PG === '0') pgSkip = 'PG=0';
  else if (!(await pgAnswers())) pgSkip = `no PostgreSQL answers at ${new URL(PG_ADMIN_URL).host} (SLB_TEST_PG_URL)`;
}

console.log(
  `config push: ${L4} L4 + ${L7} L7 nodes, ${LBS} LBs × ${LISTENERS} listeners × ${SERVERS} servers, ` +
    `${WRITES} weight changes per row, one at a time; ${execFileSync('nproc', { encoding: 'utf8' }).trim()} cores`,
);
const results = {};
for (const row of rows) {
  if (row.engine === 'pg' && pgSkip) continue;
  if (stopping) break;
  console.error(`${row.label}:`);
  results[row.key] = await runRow(row);
  report(results[row.key]);
}
if (pgSkip) console.log(`\nPostgreSQL rows skipped: ${pgSkip}`);

const p99 = (key, what = 'acked') => (results[key]?.[what].length ? percentile(results[key][what], 99) : Number.NaN);
console.log('');
if (results.pg && results.sqlite)
  console.log(`p99 acked, PostgreSQL / SQLite (one API): ${(p99('pg') / p99('sqlite')).toFixed(2)}× (no goal)`);
if (results.replicas && results.pg) {
  const lost = results.replicas.timeouts.length;
  console.log(
    `p99 acked, two replicas / one replica (PostgreSQL): ${verdict(p99('replicas') / p99('pg'), 'one replica', { max: 1.5 })}` +
      `${lost > 0 ? ` (and ${lost} writes some node never applied)` : ''}` +
      '   goal: config push p99 with two replicas within 1.5× of one replica',
  );
  const shown = p99('replicas', 'shown') / p99('pg', 'shown');
  console.log(
    `p99 until the API shows it, two replicas / one replica: ${Number.isFinite(shown) ? `${shown.toFixed(2)}×` : 'n/a (see above)'}`,
  );
}
