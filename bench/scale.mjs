#!/usr/bin/env node
// Scale load test (issue #9): a fleet of LBS load balancers × LISTENERS listeners × SERVERS servers created
// through the REST API with the nodes connected, then what it costs: API and node memory and CPU, how long a
// node takes to receive and apply the full snapshot from a fresh state dir, and to restart from its saved
// snapshot and resync. Real processes on loopback (the built API and L4/L7 nodes over the control channel).
//   npm run build && node bench/scale.mjs                (LBS=1000 LISTENERS=10 SERVERS=100 L4=2 L7=2)
//   SMALL=1 node bench/scale.mjs                        (LBS=50, a quick check)
// Knobs: CONCURRENCY (24 requests in flight), SERVER_GROUPS (2 server groups per LB), HEALTH=on (health checks left
// on; default off, so no health fleet takes part), EDGE=0 (skip the port-collision and over-limit probes),
// SYNC=off (nodes without session sync), NODES_DURING_CREATE=0 (start the nodes only after the seeding),
// PORT_BASE (first listener port, 10000), CONVERGE_TIMEOUT_S (per join/restart, 180), TIME_LIMIT_S (whole run,
// default 1800), LOG_DIR (keep each process's log there). SERVER_GROUPS=1 puts 100 servers behind every listener:
// a ~76 MB L4 snapshot, which the L4 nodes of this build cannot hold (heap out of memory at 4 GB).
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  appendFileSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { deleteRedisKeys as deleteKeys } from '@slb/test-support/redis-keys';
import { freePort } from './free-port.mjs';

const SMALL = process.env.SMALL === '1';
const LBS = Number(process.env.LBS ?? (SMALL ? 50 : 1000));
const LISTENERS = Number(process.env.LISTENERS ?? 10);
const SERVERS = Number(process.env.SERVERS ?? 100);
const GROUPS = Number(process.env.SERVER_GROUPS ?? 2);
const L4 = Number(process.env.L4 ?? 2);
const L7 = Number(process.env.L7 ?? 2);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 24);
const HEALTH = process.env.HEALTH === 'on';
const EDGE = process.env.EDGE !== '0';
const NODES_DURING_CREATE = process.env.NODES_DURING_CREATE !== '0';
// Keeps every process's log (less the per-listener lines) in this folder, for a look at what happened when.
const LOG_DIR = process.env.LOG_DIR;
if (LOG_DIR) mkdirSync(LOG_DIR, { recursive: true });
const TIME_LIMIT_MS = Number(process.env.TIME_LIMIT_S ?? 1800) * 1000;
// Listener ports: one per listener across the fleet, since every LB on a node shares the node's address.
const PORT_BASE = Number(process.env.PORT_BASE ?? 10000);
// Addresses of our own in 127/8, so other tests' nodes (127.0.0.11 …) never collide with ours.
const L4_ADDR = (n) => `127.77.0.${11 + n}`;
const L7_ADDR = (n) => `127.77.0.${21 + n}`;
// Mix per 10 listeners: 4 TCP, 3 UDP, 3 HTTP.
const protocolOf = (l) => (l % 10 < 4 ? 'tcp' : l % 10 < 7 ? 'udp' : 'http');
const HTTP_PER_LB = Array.from({ length: LISTENERS }, (_, l) => protocolOf(l)).filter((p) => p === 'http').length;

if (PORT_BASE + LBS * LISTENERS > 65536)
  throw new Error('LBS × LISTENERS does not fit in the port range above PORT_BASE');

const root = fileURLToPath(new URL('..', import.meta.url));
const runId = `scale-${randomUUID()}`;
const ADMIN = `scale-admin-${randomUUID()}`;
const NODE_TOKEN = `scale-node-${randomUUID()}`;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const redisEnv = {
  REDIS_URL,
  SLB_HEALTH_QUEUE: runId,
  SLB_HEALTH_KEY_PREFIX: `${runId}:health`,
  SLB_SESSION_SYNC_PREFIX: `${runId}:sync`,
};
const dir = mkdtempSync(join(tmpdir(), 'slb-scale-'));
const started = Date.now();
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
const children = new Set();

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const elapsed = (t) => `${((Date.now() - t) / 1000).toFixed(1)} s`;
const log = (...a) => console.error(`[${elapsed(started)}]`, ...a);
const checkTime = (what) => {
  if (Date.now() - started > TIME_LIMIT_MS) throw new Error(`time limit (${TIME_LIMIT_MS / 1000} s) hit while ${what}`);
};

/** A child process with its output kept as lines (parsed when JSON: pino), whole lines even across chunks. */
function start(name, script, env) {
  const spawnedAt = Date.now();
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc = { name, child, spawnedAt, lines: [], exited: false, probes: [] };
  if (LOG_DIR)
    appendFileSync(join(LOG_DIR, `${name}.log`), `${JSON.stringify({ time: spawnedAt, msg: 'bench: spawned' })}\n`);
  const keep = (line) => {
    if (!line) return;
    let parsed;
    try {
      parsed = JSON.parse(line);
    } catch {
      parsed = { msg: line, raw: true };
    }
    // Per-listener info lines (started, sync loaded …): thousands per snapshot, nobody reads them here.
    if (parsed.level === 30 && typeof parsed.listener === 'string') return;
    proc.lines.push(parsed);
    // A node's metrics server answers any other path with a 404 at once: a cheap probe of its event loop.
    if (parsed.msg === 'metrics listening') probe(proc, `http://127.0.0.1:${parsed.metricsPort ?? parsed.port}/ping`);
    if (LOG_DIR) appendFileSync(join(LOG_DIR, `${name}.log`), `${line}\n`);
  };
  createInterface({ input: child.stdout }).on('line', keep);
  createInterface({ input: child.stderr }).on('line', keep);
  child.on('exit', () => {
    proc.exited = true;
    children.delete(proc);
  });
  children.add(proc);
  return proc;
}

/**
 * Event-loop responsiveness of a process seen from outside: a trivial request every 500 ms, its latency kept
 * with the time it was sent. A stall of the process shows as one slow answer.
 */
function probe(proc, url) {
  void (async () => {
    while (!proc.exited) {
      const at = Date.now();
      const t = performance.now();
      try {
        await fetch(url, { signal: AbortSignal.timeout(60_000) }).then((r) => r.arrayBuffer());
        proc.probes.push({ at, ms: performance.now() - t });
      } catch {
        if (!proc.exited) proc.probes.push({ at, ms: Number.POSITIVE_INFINITY });
      }
      await sleep(500);
    }
  })();
}

/** The bench's own event-loop lag (it parses every log line of the fleet): its probes are only as good. */
const benchLag = { max: 0 };
{
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    benchLag.max = Math.max(benchLag.max, now - last - 100);
    last = now;
  }, 100).unref();
}

/** The longest probe answer of `procs` sent within [from, to], and how many took over a second. */
function stalls(procs, from, to) {
  const ms = procs.flatMap((p) => p.probes.filter((x) => x.at >= from && x.at <= to).map((x) => x.ms));
  return { max: ms.length ? Math.max(...ms) : Number.NaN, over1s: ms.filter((m) => m > 1000).length, n: ms.length };
}

/** Stops a process; resolves with how long it took to exit after `signal` (SIGKILL after `waitMs`). */
async function stop(proc, signal = 'SIGTERM', waitMs = 20_000) {
  if (proc.exited) return 0;
  const t = Date.now();
  const exited = new Promise((r) => proc.child.once('exit', r));
  proc.child.kill(signal);
  if ((await Promise.race([exited.then(() => true), sleep(waitMs).then(() => false)])) === false) {
    log(`${proc.name} did not exit within ${waitMs} ms of ${signal}; SIGKILL`);
    proc.child.kill('SIGKILL');
    await exited;
  }
  return Date.now() - t;
}

/** RSS, peak RSS (MiB) and CPU seconds (user + system) of a live process, from /proc. */
function usage(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cpu = (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime, stime (fields 14, 15)
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rssMiB: kb('VmRSS') / 1024, hwmMiB: kb('VmHWM') / 1024, cpuS: cpu };
  } catch {
    return { rssMiB: Number.NaN, hwmMiB: Number.NaN, cpuS: Number.NaN };
  }
}

const percentile = (values, p) => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

const apiPort = await freePort();
const api = `http://127.0.0.1:${apiPort}`;
const auth = { authorization: `Bearer ${ADMIN}` };
const stats = { requests: 0, retries: 0, latencies: [] };

/** One API call; a create carries an Idempotency-Key so a retry after a lost answer creates nothing twice. */
async function call(method, path, body, idempotencyKey) {
  const retriable = method === 'GET' || method === 'DELETE' || idempotencyKey !== undefined;
  for (let attempt = 0; ; attempt++) {
    const t = performance.now();
    let res;
    let text;
    try {
      res = await fetch(`${api}${path}`, {
        method,
        headers: {
          ...auth,
          ...(body ? { 'content-type': 'application/json' } : {}),
          ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(60_000),
      });
      text = await res.text();
    } catch (err) {
      if (!retriable || attempt >= 3) throw new Error(`${method} ${path}: ${String(err)}`);
      stats.retries++;
      await sleep(200 * (attempt + 1));
      continue;
    }
    stats.requests++;
    stats.latencies.push(performance.now() - t);
    if (res.ok) return text ? JSON.parse(text) : null;
    if (!retriable || attempt >= 3 || !(res.status === 429 || res.status >= 500))
      throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    stats.retries++;
    await sleep(200 * (attempt + 1));
  }
}

/** Every LB in pages of 500 (the list maximum). */
async function allLbs() {
  const out = [];
  let cursor = null;
  do {
    const page = await call(
      'GET',
      `/v1/load-balancers?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

const nodes = [];
const nodeEnv = (kind, n) => ({
  SLB_API_URL: api,
  SLB_NODE_TOKEN: NODE_TOKEN,
  SLB_NODE_ID: `scale-${runId.slice(6, 14)}-${kind}-${n}`,
  SLB_NODE_ADDRESS: kind === 'l4' ? L4_ADDR(n) : L7_ADDR(n),
  SLB_STATE_DIR: join(dir, `${kind}-${n}`),
  SLB_METRICS_PORT: '0',
  LOG_LEVEL: 'info',
  ...redisEnv,
  ...(process.env.SYNC === 'off' ? { SLB_SESSION_SYNC_REDIS_URL: 'off' } : {}),
});
/**
 * Size of the node's saved snapshot once it holds the node's last applied config (its version leads the
 * file): the full snapshot as the node keeps it, within a few bytes of the message that brought it.
 */
async function savedSnapshotBytes(proc) {
  const file = join(proc.stateDir, 'last-known-good.json');
  for (const until = Date.now() + 60_000; Date.now() < until; await sleep(200)) {
    const last = controlApplies(proc).at(-1);
    if (!existsSync(file) || last === undefined) continue;
    const fd = openSync(file, 'r');
    const buf = Buffer.alloc(200);
    const head = buf.subarray(0, readSync(fd, buf, 0, 200, 0)).toString();
    closeSync(fd);
    const version = Number(/"version":(\d+)/.exec(head)?.[1]);
    // Active-standby: the node holds its own VIPs' listeners, not the fleet's (see waitConverged).
    const whole = activeStandby(proc) || last.listeners === expectedListeners(proc.kind);
    if (version === last.version && whole) return statSync(file).size;
  }
  return Number.NaN;
}

const expectedListeners = (kind) => (kind === 'l4' ? LBS * LISTENERS : LBS * HTTP_PER_LB);
function startNode(kind, n) {
  const env = nodeEnv(kind, n);
  const proc = start(`${kind}-${n}`, join(root, `apps/${kind}-node/dist/main.js`), env);
  Object.assign(proc, { kind, n, id: env.SLB_NODE_ID, stateDir: env.SLB_STATE_DIR });
  return proc;
}
const activeStandby = (proc) => proc.lines.some((l) => l.msg === 'VIPs carried active-standby');
const controlApplies = (proc) => proc.lines.filter((l) => l.msg === 'config applied' && typeof l.applyMs === 'number');

/** Waits for a log line of `proc` (from line `from` on) matching `match`; fails on exit or after `timeoutMs`. */
async function waitLine(proc, match, from, what, timeoutMs = 300_000) {
  const until = Date.now() + timeoutMs;
  for (let i = from; ; ) {
    for (; i < proc.lines.length; i++) if (match(proc.lines[i])) return proc.lines[i];
    if (proc.exited) throw new Error(`${proc.name} exited while waiting for ${what}`);
    if (Date.now() > until) throw new Error(`${proc.name}: no ${what} within ${timeoutMs / 1000} s`);
    checkTime(`waiting for ${proc.name}: ${what}`);
    await sleep(20);
  }
}

/** Every node has applied the whole fleet and every LB is active on every L4 node. */
async function waitConverged(what, timeoutMs = 600_000) {
  const t = Date.now();
  for (const proc of nodes) {
    // Active-standby (a runtime without SO_REUSEPORT, as Node 20): an L4 node is sent only the listeners of
    // the VIPs it binds, never the whole fleet's; the LBs' status below says when the fleet has settled.
    const whole = !(proc.kind === 'l4' && activeStandby(proc));
    await waitLine(
      proc,
      (l) =>
        l.msg === 'config applied' &&
        typeof l.applyMs === 'number' &&
        (!whole || l.listeners >= expectedListeners(proc.kind)),
      0,
      `${what}: all ${expectedListeners(proc.kind)} listeners applied`,
      timeoutMs,
    );
  }
  while (true) {
    const lbs = await allLbs();
    const behind = lbs.filter((lb) => lb.status !== 'active' || lb.nodes.filter((n) => n.kind === 'l4').length !== L4);
    if (behind.length === 0 && lbs.length >= LBS) return Date.now() - t;
    if (Date.now() - t > timeoutMs) throw new Error(`${what}: ${behind.length} LBs not active after ${timeoutMs} ms`);
    checkTime(what);
    await sleep(500);
  }
}

/** The API's view of every node (GET /v1/nodes) twice a second: each online ↔ offline change, timed. */
const offline = [];
function watchNodes() {
  const state = new Map();
  let on = true;
  const loop = (async () => {
    while (on) {
      try {
        // Plain fetch: these polls are not part of the request figures.
        const page = await fetch(`${api}/v1/nodes?limit=500`, {
          headers: auth,
          signal: AbortSignal.timeout(30_000),
        }).then((r) => r.json());
        const now = Date.now();
        for (const n of page.items) {
          const name = nodes.find((p) => p.id === n.id)?.name ?? n.id;
          const was = state.get(n.id);
          if (was === undefined || was.status !== n.status) {
            if (n.status === 'offline') offline.push({ node: name, from: now, to: null });
            if (n.status === 'online' && was?.status === 'offline') {
              const open = offline.findLast((o) => o.node === name && o.to === null);
              if (open) open.to = now;
            }
            if (was !== undefined) log(`    API sees ${name} ${n.status}`);
            state.set(n.id, { status: n.status });
          }
        }
      } catch {
        // the API was busy: the next poll will tell
      }
      await sleep(500);
    }
  })();
  return async () => {
    on = false;
    await loop;
  };
}
const offlineIn = (from, to) => offline.filter((o) => o.from >= from && o.from <= to);

const apiWarnings = (proc) => {
  const counts = {};
  for (const l of proc.lines) if (l.level >= 40) counts[l.msg] = (counts[l.msg] ?? 0) + 1;
  return counts;
};

const servers = (lbIndex, from, to) =>
  Array.from({ length: to - from }, (_, k) => {
    const s = from + k;
    // Nobody listens there: health checks are off (HEALTH=on to leave them on) and no traffic is sent.
    return { address: `127.0.${Math.floor(s / 200)}.${20 + (s % 200)}`, port: 40000 + (lbIndex % 1000) };
  });

async function createLb(i) {
  const key = (step) => `${runId}-${i}-${step}`;
  const lb = await call('POST', '/v1/load-balancers', { name: `scale-${i}` }, key('lb'));
  const groups = [];
  for (let g = 0; g < GROUPS; g++) {
    const from = Math.floor((g * SERVERS) / GROUPS);
    const to = Math.floor(((g + 1) * SERVERS) / GROUPS);
    // Half the groups get their servers inline, the other half in a batch add: both paths at scale.
    if (g % 2 === 0) {
      groups.push(
        await call(
          'POST',
          `/v1/load-balancers/${lb.id}/server-groups`,
          { name: `g${g}`, servers: servers(i, from, to) },
          key(`sg${g}`),
        ),
      );
    } else {
      const sg = await call('POST', `/v1/load-balancers/${lb.id}/server-groups`, { name: `g${g}` }, key(`sg${g}`));
      if (to > from)
        await call(
          'POST',
          `/v1/load-balancers/${lb.id}/server-groups/${sg.id}/servers`,
          { servers: servers(i, from, to) },
          key(`srv${g}`),
        );
      groups.push(sg);
    }
  }
  for (let l = 0; l < LISTENERS; l++) {
    await call(
      'POST',
      `/v1/load-balancers/${lb.id}/listeners`,
      {
        protocol: protocolOf(l),
        port: PORT_BASE + i * LISTENERS + l,
        serverGroupId: groups[l % GROUPS].id,
        ...(HEALTH ? {} : { healthCheck: { enabled: false } }),
      },
      key(`lsn${l}`),
    );
  }
  return lb.id;
}

function deleteRedisKeys() {
  return deleteKeys(REDIS_URL, [`bull:${runId}:*`, `${runId}:*`]);
}

const describeAftermath = (a) =>
  `stalls: node ${fmtMs(a.nodeStall.max)}, API ${fmtMs(a.apiStall.max)}, other nodes ${fmtMs(a.otherStall.max)}; ` +
  `flaps (online → offline): ${describeFlaps(a.flaps)}; ` +
  `API saw offline: ${a.offline.length ? a.offline.join(', ') : 'none'}; ${a.applies} applies, ${a.drops} below the full set; ` +
  `RSS once settled: ${a.fleetRss.map(([n, m]) => `${n} ${fmtMiB(m)}`).join(', ')}` +
  (a.failed ? `; NOT SETTLED: ${a.failed}` : '');
/** Online → offline changes per node, as GET /v1/nodes showed them (issue #22: a join must not flap any). */
const flapsIn = (from, to, stopped) => {
  const counts = Object.fromEntries(nodes.map((p) => [p.name, 0]));
  // The stopped node's own offline spell, seen 3 s (+ a poll) after the bench stopped it, is no flap.
  let stop = offlineIn(from, to).find((o) => o.node === stopped && o.from - from <= 5000);
  for (const o of offlineIn(from, to)) {
    if (o === stop) stop = undefined;
    else counts[o.node] = (counts[o.node] ?? 0) + 1;
  }
  return counts;
};
const describeFlaps = (flaps) => {
  const total = Object.values(flaps).reduce((a, b) => a + b, 0);
  return total === 0
    ? 'none'
    : Object.entries(flaps)
        .filter(([, n]) => n > 0)
        .map(([name, n]) => `${name} ×${n}`)
        .join(', ');
};
const fmtMs = (ms) =>
  ms === Number.POSITIVE_INFINITY
    ? 'no answer'
    : Number.isNaN(ms)
      ? '–'
      : ms >= 10_000
        ? `${(ms / 1000).toFixed(1)} s`
        : `${Math.round(ms)} ms`;
const fmtMiB = (m) => `${m.toFixed(0)} MiB`;
const results = { joins: [], restarts: [], edge: {} };
let exitCode = 0;
const hardStop = setTimeout(() => {
  log(`hard time limit: killing everything`);
  for (const c of children) c.child.kill('SIGKILL');
  process.exit(3);
}, TIME_LIMIT_MS + 120_000);
hardStop.unref();
// Interrupted (Ctrl-C, a timeout's SIGTERM): leave no process, Redis key or folder behind.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    for (const c of children) c.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    void deleteRedisKeys().finally(() => process.exit(130));
  });
}

try {
  const loadAtStart = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  log(
    `scale: ${LBS} LBs × ${LISTENERS} listeners (${HTTP_PER_LB} http) × ${SERVERS} servers in ${GROUPS} groups; ${L4} L4 + ${L7} L7 nodes; health checks ${HEALTH ? 'on' : 'off'}; load ${loadAtStart}`,
  );
  const apiProc = start('api', join(root, 'apps/api/dist/main.js'), {
    PORT: String(apiPort),
    SLB_DB_PATH: join(dir, 'slb.db'),
    SLB_ADMIN_TOKEN: ADMIN,
    // Nodes join with the shared token (enrolled on joining): enrollment is not what is measured here.
    SLB_NODE_TOKEN: NODE_TOKEN,
    SLB_LEGACY_NODE_TOKEN: '1',
    SLB_DNS_PORT: '0',
    SLB_RATE_LIMIT_RPS: '0', // 0 turns the limiter off: this bench is the only client
    SLB_DEFAULT_BACKEND_NETWORKS: '127.0.0.0/8', // the bench's backends are on loopback
    LOG_LEVEL: 'warn',
    ...redisEnv,
  });
  for (
    let i = 0;
    !(await fetch(`${api}/healthz`).then(
      (r) => r.ok,
      () => false,
    ));
    i++
  ) {
    if (i > 200 || apiProc.exited)
      throw new Error(`the API did not start:\n${apiProc.lines.map((l) => JSON.stringify(l)).join('\n')}`);
    await sleep(100);
  }
  probe(apiProc, `${api}/healthz`);
  let stopWatching = async () => {};
  const startNodes = async () => {
    for (let n = 0; n < L4; n++) nodes.push(startNode('l4', n));
    for (let n = 0; n < L7; n++) nodes.push(startNode('l7', n));
    for (const p of nodes)
      await waitLine(p, (l) => l.msg === 'control channel connected', 0, 'channel connected', 30_000);
    stopWatching = watchNodes();
  };
  if (NODES_DURING_CREATE) await startNodes();

  // ---- Seeding through the API.
  const apiBefore = usage(apiProc.child.pid);
  const nodesBefore = new Map(nodes.map((p) => [p.name, usage(p.child.pid)]));
  const createStart = Date.now();
  let next = 0;
  let done = 0;
  let lastReq = 0;
  let lastAt = createStart;
  // Issue #22: a write should cost the same at 1,000 LBs as at 100. Marks where each tenth of the LBs is done
  // (time, requests, API CPU), so the rate of the last tenth can be set against that of the first.
  const tenths = [{ at: createStart, requests: 0, cpuS: apiBefore.cpuS }];
  const markTenth = () => {
    while (tenths.length <= 10 && done >= Math.ceil((LBS * tenths.length) / 10))
      tenths.push({ at: Date.now(), requests: stats.requests, cpuS: usage(apiProc.child.pid).cpuS });
  };
  const progress = setInterval(() => {
    const u = usage(apiProc.child.pid);
    const now = Date.now();
    const rate = ((stats.requests - lastReq) * 1000) / (now - lastAt);
    lastReq = stats.requests;
    lastAt = now;
    const nodeRss = nodes.map((p) => `${p.name} ${fmtMiB(usage(p.child.pid).rssMiB)}`).join(', ');
    log(
      `  ${done}/${LBS} LBs, ${stats.requests} requests (${rate.toFixed(0)} req/s now); API ${fmtMiB(u.rssMiB)} ${u.cpuS.toFixed(0)} CPU s${nodeRss ? `; ${nodeRss}` : ''}`,
    );
  }, 5000);
  try {
    await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, LBS) }, async () => {
        while (next < LBS) {
          const i = next++;
          await createLb(i);
          done++;
          markTenth();
          checkTime(`creating LB ${i}`);
        }
      }),
    );
  } finally {
    clearInterval(progress);
  }
  const createMs = Date.now() - createStart;
  const createRequests = stats.requests;
  const healthz = apiProc.probes.filter((x) => x.at >= createStart).map((x) => x.ms);
  const createLatencies = stats.latencies.slice();
  log(
    `created in ${fmtMs(createMs)} (${createRequests} requests, ${((createRequests * 1000) / createMs).toFixed(0)} req/s, ${stats.retries} retries)`,
  );
  const createTenths = tenths.slice(1).map((t, k) => {
    const from = tenths[k];
    const requests = t.requests - from.requests;
    return {
      lbs: Math.ceil((LBS * (k + 1)) / 10),
      reqPerS: (requests * 1000) / Math.max(1, t.at - from.at),
      cpuMsPerReq: ((t.cpuS - from.cpuS) * 1000) / Math.max(1, requests),
    };
  });
  log(
    `create req/s per tenth of the LBs: ${createTenths.map((t) => `${t.reqPerS.toFixed(0)} (to ${t.lbs}; API ${t.cpuMsPerReq.toFixed(1)} ms CPU/req)`).join(', ')}`,
  );
  const slowdown = createTenths.length === 10 ? createTenths[0].reqPerS / createTenths[9].reqPerS : Number.NaN;
  log(
    `create rate, last tenth / first tenth: ${(1 / slowdown).toFixed(2)}, a ${slowdown.toFixed(2)}× slowdown (goal ≤1.5×: ${slowdown <= 1.5 ? 'met' : 'NOT met'})`,
  );

  if (!NODES_DURING_CREATE) await startNodes();
  // Not settling is a finding (issue #22), not the end of the run: the joins are measured all the same.
  const convergeMs = await waitConverged('after seeding', Number(process.env.CONVERGE_TIMEOUT_S ?? 180) * 1000).catch(
    (err) => {
      log(`  after seeding: ${err.message}`);
      return Number.NaN;
    },
  );
  log(`every node converged ${fmtMs(convergeMs)} after the last write`);
  const apiAfter = usage(apiProc.child.pid);
  const nodesAfter = new Map(nodes.map((p) => [p.name, usage(p.child.pid)]));
  const dbBytes = ['slb.db', 'slb.db-wal']
    .map((f) => join(dir, f))
    .filter(existsSync)
    .reduce((a, f) => a + statSync(f).size, 0);
  results.seed = {
    createMs,
    createRequests,
    convergeMs,
    apiBefore,
    apiAfter,
    nodesBefore,
    nodesAfter,
    healthz,
    createLatencies,
    createTenths,
    dbBytes,
  };

  // ---- Fresh join: each node in turn stopped, its state dir wiped, started: the full snapshot over the channel.
  const CONVERGE_MS = Number(process.env.CONVERGE_TIMEOUT_S ?? 180) * 1000;
  /** Waits for the fleet to settle after a node's start; a timeout is a finding, not the end of the run. */
  const settle = async (what, proc) => {
    try {
      await waitConverged(what, CONVERGE_MS);
      return { settledMs: Date.now() - proc.spawnedAt, failed: null };
    } catch (err) {
      log(`  ${what}: ${err.message}`);
      return { settledMs: Number.NaN, failed: err.message };
    }
  };
  /** What happened to the fleet while `proc` joined: stalls, nodes the API saw offline, listener swings. */
  const aftermath = (proc, from, to) => {
    const applies = controlApplies(proc);
    return {
      nodeStall: stalls([proc], from, to),
      apiStall: stalls([apiProc], from, to),
      otherStall: stalls(
        nodes.filter((p) => p !== proc),
        from,
        to,
      ),
      offline: offlineIn(from, to).map((o) => `${o.node} ${fmtMs((o.to ?? to) - o.from)}`),
      flaps: flapsIn(from, to, proc.name),
      fleetRss: nodes.map((p) => [p.name, usage(p.child.pid).rssMiB]),
      // A node that drops below the full set after having it was taken off its LBs and given them back.
      drops: applies.filter((l, i) => i > 0 && l.listeners < expectedListeners(proc.kind)).length,
      applies: applies.length,
    };
  };
  for (let k = 0; k < nodes.length; k++) {
    const old = nodes[k];
    const from = Date.now();
    await stop(old);
    // Its saved config goes, its credential stays: the node enrolled on its first join, and the API no
    // longer lets the shared token speak for it ("this node has its own credential").
    for (const f of readdirSync(old.stateDir))
      if (f !== 'credential.json') rmSync(join(old.stateDir, f), { force: true });
    const before = (await call('GET', `/v1/nodes/${old.id}`)).appliedConfigVersion;
    const apiCpu = usage(apiProc.child.pid).cpuS;
    const proc = startNode(old.kind, old.n);
    nodes[k] = proc;
    const connected = await waitLine(
      proc,
      (l) => l.msg === 'control channel connected',
      0,
      'channel connected',
      60_000,
    );
    const applied = await waitLine(
      proc,
      (l) => l.msg === 'config applied' && typeof l.applyMs === 'number',
      0,
      'the full snapshot applied',
    );
    if (applied.listeners !== expectedListeners(proc.kind) && !activeStandby(proc))
      log(
        `  ${proc.name}: first snapshot had ${applied.listeners} listeners, expected ${expectedListeners(proc.kind)}`,
      );
    let ackedAtApi = null;
    for (const until = Date.now() + 60_000; Date.now() < until; await sleep(50)) {
      const node = await call('GET', `/v1/nodes/${proc.id}`);
      if (node.appliedConfigVersion > before) {
        ackedAtApi = Date.now() - proc.spawnedAt;
        break;
      }
    }
    const u = usage(proc.child.pid);
    const settled = await settle(`after the fresh join of ${proc.name}`, proc);
    const snapshotBytes = settled.failed ? Number.NaN : await savedSnapshotBytes(proc);
    const join_ = {
      node: proc.name,
      connectMs: connected.time - proc.spawnedAt,
      ackMs: applied.time - proc.spawnedAt,
      ackedAtApi,
      applyMs: applied.applyMs,
      // Connected → the apply starts: the API compiles and sends, the node parses and validates.
      deliverMs: applied.time - connected.time - applied.applyMs,
      listeners: applied.listeners,
      snapshotBytes,
      rssMiB: u.rssMiB,
      hwmMiB: u.hwmMiB,
      cpuS: u.cpuS,
      apiCpuS: usage(apiProc.child.pid).cpuS - apiCpu,
      ...settled,
      ...aftermath(proc, from, Date.now()),
    };
    results.joins.push(join_);
    log(
      `  fresh ${proc.name}: connected +${fmtMs(join_.connectMs)}, full snapshot (${(snapshotBytes / 1e6).toFixed(1)} MB, ${applied.listeners} listeners) acked +${fmtMs(join_.ackMs)} (apply ${fmtMs(applied.applyMs)}), seen by the API +${fmtMs(ackedAtApi ?? Number.NaN)}; fleet settled +${fmtMs(join_.settledMs)}; ${describeAftermath(join_)}`,
    );
  }

  // ---- Restart: stopped (the saved snapshot flushed) and started again: saved snapshot first, then resync.
  for (let k = 0; k < nodes.length; k++) {
    const old = nodes[k];
    const from = Date.now();
    const stopMs = await stop(old);
    const proc = startNode(old.kind, old.n);
    nodes[k] = proc;
    const saved = await waitLine(
      proc,
      (l) => l.msg === 'serving the saved snapshot until the control plane answers',
      0,
      'the saved snapshot served',
    );
    const applied = await waitLine(
      proc,
      (l) => l.msg === 'config applied' && typeof l.applyMs === 'number',
      0,
      'the resync applied',
    );
    const u = usage(proc.child.pid);
    // The saved file is the old process's last applied config: its version names it.
    const savedListeners = controlApplies(old).findLast((l) => l.version === saved.version)?.listeners;
    const settled = await settle(`after the restart of ${proc.name}`, proc);
    const r = {
      node: proc.name,
      stopMs,
      savedListeners,
      savedMs: saved.time - proc.spawnedAt,
      resyncMs: applied.time - proc.spawnedAt,
      applyMs: applied.applyMs,
      rssMiB: u.rssMiB,
      hwmMiB: u.hwmMiB,
      cpuS: u.cpuS,
      ...settled,
      ...aftermath(proc, from, Date.now()),
    };
    results.restarts.push(r);
    log(
      `  restarted ${proc.name} (old one exited ${fmtMs(stopMs)} after SIGTERM): serving the saved snapshot (${savedListeners} listeners) +${fmtMs(r.savedMs)}, resync acked +${fmtMs(r.resyncMs)} (apply ${fmtMs(r.applyMs)}); fleet settled +${fmtMs(r.settledMs)}; ${describeAftermath(r)}`,
    );
  }

  // ---- Edge probes: a listener port another LB on the same node already uses, and one listener too many.
  if (EDGE) {
    try {
      const lb0 = (await allLbs()).find((lb) => lb.name === 'scale-0');
      const dup = await call('POST', '/v1/load-balancers', { name: 'scale-dup-port' });
      const dupSg = await call('POST', `/v1/load-balancers/${dup.id}/server-groups`, {
        name: 'g',
        servers: servers(0, 0, 1),
      });
      // LB scale-0's first port: the API refuses it (409), since every LB shares its nodes' addresses.
      const refused = await call('POST', `/v1/load-balancers/${dup.id}/listeners`, {
        protocol: 'tcp',
        port: PORT_BASE,
        serverGroupId: dupSg.id,
        healthCheck: { enabled: false },
      }).then(
        () => 'created (201)',
        (err) => (/: 409 /.test(String(err)) ? 'refused (409)' : `failed: ${String(err).slice(0, 120)}`),
      );
      const lb0After = await call('GET', `/v1/load-balancers/${lb0.id}`);
      results.edge.duplicatePort = { refused, lb0Status: lb0After.status };
      log(`  duplicate port: listener ${refused}, scale-0 ${lb0After.status}`);
      await call('DELETE', `/v1/load-balancers/${dup.id}`);
      await waitConverged('after removing the duplicate-port LB', 120_000);

      if (LBS * LISTENERS >= 10_000) {
        const over = await call('POST', '/v1/load-balancers', { name: 'scale-over-limit' });
        const overSg = await call('POST', `/v1/load-balancers/${over.id}/server-groups`, {
          name: 'g',
          servers: servers(0, 0, 1),
        });
        // One listener past what a node runs: the API refuses it (409) rather than have the nodes refuse
        // the whole config.
        const refused = await call('POST', `/v1/load-balancers/${over.id}/listeners`, {
          protocol: 'tcp',
          port: PORT_BASE + LBS * LISTENERS,
          serverGroupId: overSg.id,
          healthCheck: { enabled: false },
        }).then(
          () => 'created (201)',
          (err) => (/: 409 /.test(String(err)) ? 'refused (409)' : `failed: ${String(err).slice(0, 120)}`),
        );
        await call('DELETE', `/v1/load-balancers/${over.id}`);
        results.edge.overLimit = { refused };
        log(`  one listener over 10,000: ${refused}`);
      }
    } catch (err) {
      results.edge.error = err instanceof Error ? err.message : String(err);
      log(`  edge probes: ${results.edge.error}`);
    }
  }

  await stopWatching();
  // ---- Report.
  const apiEnd = usage(apiProc.child.pid);
  const s = results.seed;
  const loadAtEnd = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const rows = [
    [
      'fleet',
      `${LBS} LBs, ${LBS * LISTENERS} listeners (${LBS * HTTP_PER_LB} http), ${LBS * SERVERS} servers; ${L4} L4 + ${L7} L7 nodes; health checks ${HEALTH ? 'on' : 'off'}`,
    ],
    [
      'create through the API',
      `${fmtMs(s.createMs)}, ${s.createRequests} requests, ${((s.createRequests * 1000) / s.createMs).toFixed(0)} req/s at ${CONCURRENCY} in flight, nodes ${NODES_DURING_CREATE ? 'connected' : 'not started'}`,
    ],
    [
      'request latency while creating',
      `p50 ${fmtMs(percentile(s.createLatencies, 50))}, p99 ${fmtMs(percentile(s.createLatencies, 99))}, max ${fmtMs(Math.max(...s.createLatencies))}`,
    ],
    [
      'GET /healthz while creating (2/s)',
      `p50 ${fmtMs(percentile(s.healthz, 50))}, max ${fmtMs(Math.max(...s.healthz))}`,
    ],
    ['last write → every node converged', fmtMs(s.convergeMs)],
    [
      'API CPU while creating',
      `${(s.apiAfter.cpuS - s.apiBefore.cpuS).toFixed(1)} s (${((((s.apiAfter.cpuS - s.apiBefore.cpuS) * 1000) / (s.createMs + s.convergeMs)) * 100).toFixed(0)}% of a core)`,
    ],
    [
      'API at the end',
      `RSS ${fmtMiB(apiEnd.rssMiB)} (peak ${fmtMiB(apiEnd.hwmMiB)}), ${apiEnd.cpuS.toFixed(1)} CPU s in all`,
    ],
    ['SQLite file (+WAL) after seeding', `${(s.dbBytes / 1e6).toFixed(1)} MB`],
  ];
  for (const p of nodes) {
    const b = s.nodesBefore.get(p.name);
    const a = s.nodesAfter.get(p.name);
    if (a && b)
      rows.push([
        `${p.name} while creating`,
        `${(a.cpuS - b.cpuS).toFixed(1)} CPU s; RSS ${fmtMiB(a.rssMiB)} (peak ${fmtMiB(a.hwmMiB)})`,
      ]);
  }
  for (const j of results.joins) {
    rows.push([
      `${j.node} fresh join (full snapshot)`,
      `${(j.snapshotBytes / 1e6).toFixed(1)} MB, ${j.listeners} listeners; start → connected ${fmtMs(j.connectMs)}, → acked ${fmtMs(j.ackMs)} (API saw it at ${fmtMs(j.ackedAtApi ?? Number.NaN)}); connected → apply starts ${fmtMs(j.deliverMs)}, apply ${fmtMs(j.applyMs)}; RSS ${fmtMiB(j.rssMiB)} (peak ${fmtMiB(j.hwmMiB)}), ${j.cpuS.toFixed(1)} CPU s; API ${j.apiCpuS.toFixed(1)} CPU s; fleet settled ${fmtMs(j.settledMs)}; ${describeAftermath(j)}`,
    ]);
  }
  for (const r of results.restarts) {
    rows.push([
      `${r.node} restart`,
      `old process exited ${fmtMs(r.stopMs)} after SIGTERM; saved snapshot (${r.savedListeners} listeners) served ${fmtMs(r.savedMs)}, resync acked ${fmtMs(r.resyncMs)} (apply ${fmtMs(r.applyMs)}); RSS ${fmtMiB(r.rssMiB)} (peak ${fmtMiB(r.hwmMiB)}), ${r.cpuS.toFixed(1)} CPU s; fleet settled ${fmtMs(r.settledMs)}; ${describeAftermath(r)}`,
    ]);
  }
  if (results.edge.duplicatePort) {
    const d = results.edge.duplicatePort;
    rows.push(['listener port already used on the node', `listener ${d.refused}; the first owner ${d.lb0Status}`]);
  }
  if (results.edge.overLimit) {
    const o = results.edge.overLimit;
    rows.push(['10,001st listener in the fleet', `listener ${o.refused}`]);
  }
  if (results.edge.error) rows.push(['edge probes', `failed: ${results.edge.error}`]);
  rows.push(['load average (1/5/15 min)', `start ${loadAtStart}, end ${loadAtEnd}`]);
  rows.push(['bench process lag (max)', `${fmtMs(benchLag.max)} (probe latencies include it)`]);
  rows.push([
    'nodes the API saw offline (whole run)',
    offline.length
      ? offline
          .map((o) => `${o.node} at +${fmtMs(o.from - started)} for ${fmtMs((o.to ?? Date.now()) - o.from)}`)
          .join('; ')
      : 'none',
  ]);
  const warnings = apiWarnings(apiProc);
  if (Object.keys(warnings).length > 0) rows.push(['API warnings', JSON.stringify(warnings)]);
  for (const p of nodes) {
    const w = apiWarnings(p);
    if (Object.keys(w).length > 0) rows.push([`${p.name} warnings`, JSON.stringify(w)]);
  }
  const width = Math.max(...rows.map((r) => r[0].length));
  console.log(`\nscale (${elapsed(started)} in all)`);
  for (const [k, v] of rows) console.log(`  ${k.padEnd(width)}  ${v}`);
} catch (err) {
  exitCode = 1;
  console.error(`scale bench failed: ${err instanceof Error ? err.stack : String(err)}`);
  for (const p of children) {
    const tail = p.lines
      .slice(-15)
      .map((l) => JSON.stringify(l))
      .join('\n    ');
    console.error(`--- ${p.name} (last lines)\n    ${tail}`);
  }
} finally {
  await Promise.all([...children].map((p) => stop(p, 'SIGKILL', 5000)));
  await deleteRedisKeys();
  rmSync(dir, { recursive: true, force: true });
  clearTimeout(hardStop);
}
process.exit(exitCode);
