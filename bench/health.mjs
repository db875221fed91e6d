#!/usr/bin/env node
// Health-check fleet benchmark, loopback only: 10,000 TCP targets at a 2 s interval, 1 then 2 worker processes.
//
//   npx tsc -b apps/health-worker apps/api && node bench/health.mjs
//   TARGETS=2000 PHASE=10 node bench/health.mjs      # smaller / shorter
//   WORKERS=2 node bench/health.mjs                  # one phase, from a clean start (no backlog of phase 1)
//   WARMUP=15 node bench/health.mjs                  # seconds before each phase's measurement (default 6, then 3)
//
// Backends: one child process with TARGETS listeners on 127.0.0.1 (one port per target); 1 % of them flap
// (closed and reopened every 7 s) and, in each phase, 100 others are killed 5 s in to measure detection.
// Checks are scheduled straight on BullMQ with the API's own shard planner (apps/api/src/health/shards.ts:
// one job scheduler per shard of probes, every 2 s; SHARDS, default 64), so the control plane's SQLite is not
// part of the measurement. Per phase it reports achieved checks/s and checks given up because they were a
// whole interval late (worker counters), p50/p99 lateness of a check against its own due time (worker
// check-lateness histogram, interpolated in its bucket), detection latency from a backend's death to the
// transition entry in the stream, and CPU per 1,000 checks (workers' /proc utime+stime; Redis from INFO cpu,
// so it includes whatever else uses that Redis). Every process it starts is stopped by PID on exit, and
// every Redis key it made is deleted.
import { fork, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const TARGETS = Number(process.env.TARGETS ?? 10_000);
const PHASE_S = Number(process.env.PHASE ?? 20);
const INTERVAL_S = 2;
const SHARDS = Number(process.env.SHARDS ?? 64);
const WORKER_COUNTS = (process.env.WORKERS ?? '1,2').split(',').map(Number);
const WARMUP_S = process.env.WARMUP === undefined ? null : Number(process.env.WARMUP);
const KILLED_PER_PHASE = Math.min(100, Math.floor(TARGETS / 20));
const FLAPPING = Math.floor(TARGETS / 100);

if (process.argv[2] === '--backends') backends();
else await main();

/** Child: TARGETS listeners; answers IPC `stop`/`start` of index lists. */
async function backends() {
  const servers = [];
  const ports = [];
  for (let i = 0; i < TARGETS; i++) {
    const server = net.createServer((s) => s.destroy());
    server.on('error', () => {});
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
    ports.push(server.address().port);
  }
  const listen = (i) => new Promise((r) => servers[i].listen(ports[i], '127.0.0.1', r));
  process.on('message', async ({ op, indexes }) => {
    if (op === 'stop') for (const i of indexes) servers[i].close();
    if (op === 'start') await Promise.all(indexes.map(listen));
    process.send({ op: 'done' });
  });
  process.send({ op: 'ports', ports });
}

async function main() {
  const [{ Queue }, { Redis }, health, model, shards] = await Promise.all([
    import('bullmq'),
    import('ioredis'),
    import(fileURLToPath(new URL('../packages/health/dist/index.js', import.meta.url))),
    import(fileURLToPath(new URL('../packages/model/dist/index.js', import.meta.url))),
    import(fileURLToPath(new URL('../apps/api/dist/health/shards.js', import.meta.url))),
  ]);
  const queueName = `bench-${randomUUID()}`;
  const keyPrefix = `bench-${randomUUID()}`;
  const stream = model.healthTransitionsStream(keyPrefix);
  const redis = new Redis(REDIS_URL);
  const children = [];
  const cleanup = async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  };
  process.on('exit', () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  });

  const backend = fork(fileURLToPath(import.meta.url), ['--backends'], {
    env: { ...process.env, TARGETS: String(TARGETS) },
  });
  children.push(backend);
  const ask = (op, indexes) =>
    new Promise((resolve) => {
      backend.once('message', resolve);
      backend.send({ op, indexes });
    });
  const ports = await new Promise((resolve) => backend.once('message', (m) => resolve(m.ports)));
  console.log(`backends: ${ports.length} listeners on 127.0.0.1`);

  const queue = new Queue(queueName, {
    connection: { host: new URL(REDIS_URL).hostname, port: Number(new URL(REDIS_URL).port || 6379) },
  });
  const t0 = Date.now();
  const base = { interval: INTERVAL_S, timeout: 1, healthyThreshold: 2, unhealthyThreshold: 3 };
  const targetOf = [];
  const probes = [];
  for (let j = 0; j < TARGETS; j++) {
    const settings = health.resolveHealthCheck(base, { listenerProtocol: 'tcp', serverPort: ports[j] });
    const target = {
      listenerId: `lsn-bench${String(j).padStart(15, '0')}`,
      serverId: `srv-bench${String(j).padStart(15, '0')}`,
      healthyThreshold: 2,
      unhealthyThreshold: 3,
    };
    targetOf.push(target);
    probes.push({ key: health.probeKey('127.0.0.1', settings), address: '127.0.0.1', settings, targets: [target] });
  }
  // As HealthScheduler.upsert does.
  const plan = shards.planShards(probes, SHARDS);
  await Promise.all(
    [...plan.values()].map((shard) =>
      queue.upsertJobScheduler(
        shard.id,
        { every: shard.every, offset: shard.offset },
        { name: 'health-shard', data: shard.job, opts: model.HEALTH_JOBS['health-shard'].options },
      ),
    ),
  );
  console.log(`scheduled ${TARGETS} probes in ${plan.size} shard job schedulers in ${Date.now() - t0} ms`);

  const workers = [];
  async function startWorker() {
    const port = await freePort();
    const child = spawn(process.execPath, [`${ROOT}apps/health-worker/dist/main.js`], {
      env: {
        ...process.env,
        REDIS_URL,
        SLB_HEALTH_QUEUE: queueName,
        SLB_HEALTH_KEY_PREFIX: keyPrefix,
        SLB_METRICS_PORT: String(port),
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    await waitForMetrics(port);
    workers.push({ child, port });
  }

  async function scrape() {
    let checks = 0;
    let skipped = 0;
    const byWorker = [];
    const lag = new Map();
    const jobLag = new Map();
    for (const w of workers) {
      const text = await (await fetch(`http://127.0.0.1:${w.port}/metrics`)).text();
      byWorker.push(0);
      for (const line of text.split('\n')) {
        if (line.startsWith('slb_health_checks_total{')) {
          checks += Number(line.split(' ').pop());
          byWorker[byWorker.length - 1] += Number(line.split(' ').pop());
        }
        if (line.startsWith('slb_health_checks_skipped_total ')) skipped += Number(line.split(' ').pop());
        const m = /^slb_health_(check_lateness|queue_lag)_seconds_bucket\{le="([^"]+)"\} (\d+)/.exec(line);
        const into = m?.[1] === 'check_lateness' ? lag : jobLag;
        if (m) into.set(m[2], (into.get(m[2]) ?? 0) + Number(m[3]));
      }
    }
    const cpu = workers.reduce((sum, w) => sum + cpuSeconds(w.child.pid), 0);
    const info = await redis.info('cpu');
    const redisCpu = ['used_cpu_sys', 'used_cpu_user'].reduce(
      (s, k) => s + Number(new RegExp(`${k}:([\\d.]+)`).exec(info)[1]),
      0,
    );
    return { at: Date.now(), checks, byWorker, skipped, lag, jobLag, cpu, redisCpu };
  }

  const phases = [];
  let flapTimer;
  let killedSoFar = 0;
  for (const workerCount of WORKER_COUNTS) {
    while (workers.length < workerCount) await startWorker();
    // Warm-up: every target through its first healthy run (2 checks), new worker connected.
    await sleep(WARMUP_S !== null ? WARMUP_S * 1000 : workerCount === WORKER_COUNTS[0] ? 6000 : 3000);
    if (!flapTimer) {
      let down = false;
      const flappers = Array.from({ length: FLAPPING }, (_, i) => TARGETS - 1 - i);
      flapTimer = setInterval(() => {
        down = !down;
        void ask(down ? 'stop' : 'start', flappers);
      }, 7000);
    }
    const killed = Array.from({ length: KILLED_PER_PHASE }, (_, i) => killedSoFar + i);
    killedSoFar += KILLED_PER_PHASE;
    const killedKeys = new Set(killed.map((i) => targetOf[i].listenerId));
    const start = await scrape();
    await sleep(5000);
    const lastId = (await redis.xrevrange(stream, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0';
    const killedAt = Date.now();
    await ask('stop', killed);
    await sleep(PHASE_S * 1000 - 5000);
    const end = await scrape();
    const entries = await redis.xrange(stream, lastId, '+');
    const detections = [];
    for (const [id, fields] of entries) {
      const msg = JSON.parse(fields[1]);
      if (msg.status === 'abnormal' && killedKeys.delete(msg.listenerId))
        detections.push(Number(id.split('-')[0]) - killedAt);
    }
    detections.sort((a, b) => a - b);
    const seconds = (end.at - start.at) / 1000;
    const checks = end.checks - start.checks;
    phases.push({
      workers: workerCount,
      'checks/s': Math.round(checks / seconds),
      'per worker': end.byWorker.map((c, i) => Math.round((c - (start.byWorker[i] ?? 0)) / seconds)).join('/'),
      'required/s': TARGETS / INTERVAL_S,
      // Checks a whole interval late are given up (the next turn checks the target): the fleet is short.
      'skipped/s': Math.round((end.skipped - start.skipped) / seconds),
      'lateness p50 ms': Math.round(quantile(start.lag, end.lag, 0.5) * 1000),
      'lateness p99 ms': Math.round(quantile(start.lag, end.lag, 0.99) * 1000),
      // Of the shard jobs themselves (BullMQ promotion and pickup), for telling queue delay from a busy worker.
      'job pickup p99 ms': Math.round(quantile(start.jobLag, end.jobLag, 0.99) * 1000),
      'detection p50 ms': detections.length ? detections[Math.floor(detections.length * 0.5)] : null,
      'detection p99 ms': detections.length
        ? detections[Math.min(detections.length - 1, Math.floor(detections.length * 0.99))]
        : null,
      detected: `${detections.length}/${KILLED_PER_PHASE}`,
      'worker CPU s / 1k checks': +((end.cpu - start.cpu) / (checks / 1000)).toFixed(3),
      'redis CPU s / 1k checks': +((end.redisCpu - start.redisCpu) / (checks / 1000)).toFixed(3),
    });
    console.log(phases.at(-1));
  }
  clearInterval(flapTimer);
  console.table(phases);
  console.log(
    `expected detection ≈ interval × (unhealthyThreshold − 1) + U(0, interval) = ${INTERVAL_S * 2}–${INTERVAL_S * 3} s`,
  );

  for (const w of workers) w.child.kill('SIGTERM');
  await Promise.all(
    workers.map((w) => new Promise((r) => (w.child.exitCode !== null ? r() : w.child.once('exit', r)))),
  );
  await queue.obliterate({ force: true }).catch(() => {});
  await queue.close();
  for (const pattern of [`${keyPrefix}:*`, `bull:${queueName}:*`]) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  }
  await redis.quit();
  await cleanup();
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

function cpuSeconds(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks (100/s)
}

async function waitForMetrics(port) {
  for (let i = 0; i < 150; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/metrics`)).ok) return;
    } catch {}
    await sleep(100);
  }
  throw new Error('worker did not start');
}

/** Quantile of the observations between two scrapes of a cumulative histogram, linear within a bucket. */
function quantile(before, after, q) {
  const bounds = [...after.keys()]
    .filter((k) => k !== '+Inf')
    .map(Number)
    .sort((a, b) => a - b);
  const count = (le) => (after.get(String(le)) ?? 0) - (before.get(String(le)) ?? 0);
  const total = (after.get('+Inf') ?? 0) - (before.get('+Inf') ?? 0);
  if (total === 0) return Number.NaN;
  const rank = q * total;
  let prevBound = 0;
  let prevCount = 0;
  for (const b of bounds) {
    const c = count(b);
    if (c >= rank) return prevBound + ((b - prevBound) * (rank - prevCount)) / Math.max(1, c - prevCount);
    prevBound = b;
    prevCount = c;
  }
  return Number.POSITIVE_INFINITY;
}
