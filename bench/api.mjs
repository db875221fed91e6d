#!/usr/bin/env node
// Measures the API beside a bare fastify route returning the same JSON, in one run, and prints ratios.
//   npm run build && node bench/api.mjs     (DURATION=5 per round, ROUNDS=3, CONNECTIONS=50 to change the load)
// Servers are pinned to CPU 1 and the load generator to CPU 0 when `taskset` exists (2-core machines).
// Each row prints the generator's CPU (autocannon, in this process) and the server's, what limited it
// (bench/bench-verdict.mjs) and the server's CPU µs per request; the ratios divide req/s only when both rows
// saturated the server's core, else CPU µs/req (`by CPU/req`): autocannon usually runs out of core first.
// With PostgreSQL reachable (SLB_TEST_PG_URL, default 127.0.0.1:5432; PG=0 to skip) the same API runs a second
// time on a database of its own, and the rows compare the two engines (issue 23's goal: reads on PostgreSQL at
// 0.5× SQLite or more). The PostgreSQL rows' server CPU is the API's and PostgreSQL's (the postmaster and its
// backends; PostgreSQL is not pinned), and the engines are compared by that CPU per request.
// After those rounds a second PostgreSQL API joins the first as a replica (same database, same Redis; REPLICAS=0
// to skip), and the two-replica rows send half the connections to each. Both replicas are pinned to the servers'
// one CPU, so these rows say what running a second replica costs on one machine, not what a machine would add.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deleteRedisKeys } from '@slb/test-support/redis-keys';
import autocannon from 'autocannon';
import { createScratchDatabase } from '../scripts/pg-scratch.mjs';
import { bottleneck, compare, cpuMicrosPer, cpuPercent, verdict } from './bench-verdict.mjs';
import { freePort } from './free-port.mjs';
import { cpuSeconds } from './proc-cpu.mjs';

const DURATION = Number(process.env.DURATION ?? 5);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 50);
const root = fileURLToPath(new URL('..', import.meta.url));
const TOKEN = 'bench-admin-token-0123456789';

const hasTaskset = (() => {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (hasTaskset) execFileSync('taskset', ['-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });

function start(script, env) {
  const cmd = hasTaskset ? 'taskset' : process.execPath;
  const args = hasTaskset ? ['-c', '1', process.execPath, ...script] : script;
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  return child;
}

async function waitFor(url) {
  for (let i = 0; i < 100; i++) {
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

const run = (opts) =>
  new Promise((resolve, reject) => {
    const instance = autocannon({ duration: DURATION, connections: CONNECTIONS, ...opts }, (err, res) =>
      err ? reject(err) : resolve(res),
    );
    autocannon.track(instance, { renderProgressBar: process.stderr.isTTY, renderResultsTable: false });
  });

/**
 * Runs split over several targets at once (`opts` a list: the connections shared between them), as one result:
 * requests summed, the worst latency of them.
 */
async function runAll(opts) {
  if (!Array.isArray(opts)) return run(opts);
  const share = Math.max(1, Math.floor(CONNECTIONS / opts.length));
  const all = await Promise.all(opts.map((o) => run({ connections: share, ...o })));
  return {
    requests: {
      average: all.reduce((n, r) => n + r.requests.average, 0),
      total: all.reduce((n, r) => n + r.requests.total, 0),
    },
    latency: { p50: Math.max(...all.map((r) => r.latency.p50)), p99: Math.max(...all.map((r) => r.latency.p99)) },
    non2xx: all.reduce((n, r) => n + r.non2xx, 0),
    errors: all.reduce((n, r) => n + r.errors, 0),
  };
}

/** A run with the CPU autocannon (this process) and the server used meanwhile. */
async function measured(opts, server) {
  const t0 = performance.now();
  const own0 = process.cpuUsage();
  const servers = [server].flat();
  const server0 = cpuSeconds(servers);
  const res = await runAll(opts);
  const own = process.cpuUsage(own0);
  const wall = (performance.now() - t0) / 1000;
  const serverCpu = cpuSeconds(servers) - server0;
  const genPct = cpuPercent((own.user + own.system) / 1e6, wall);
  const targetPct = cpuPercent(serverCpu, wall);
  const cores = hasTaskset ? 1 : 2;
  res.cpu = {
    genPct,
    targetPct,
    rate: res.requests.average,
    cpuUs: cpuMicrosPer(serverCpu, res.requests.total),
    limit: bottleneck({ loadPct: genPct, loadCores: cores, targetPct, targetCores: cores }),
    load1: loadavg()[0],
  };
  return res;
}

/** PostgreSQL's postmaster (its backends are its children), as a process cpuSeconds counts; pid 0 if none. */
function postmaster() {
  try {
    const pids = execFileSync('pgrep', ['-o', '-x', 'postgres'], { encoding: 'utf8' }).trim();
    return { pid: Number(pids.split('\n')[0]) };
  } catch {
    return { pid: 0 };
  }
}

/** A database of this run's own on the tests' PostgreSQL, or null when none answers (or PG=0). */
async function pgDatabase() {
  if (process.env.PG === '0') return null;
  return createScratchDatabase('slb_bench').catch((err) => {
    console.error(`no PostgreSQL rows: ${err.message}`);
    return null;
  });
}

const dir = mkdtempSync(join(tmpdir(), 'slb-bench-'));
const apiPort = await freePort();
const barePort = await freePort();
const apiEnv = {
  SLB_ADMIN_TOKEN: TOKEN,
  SLB_DNS_PORT: '0',
  SLB_RATE_LIMIT_RPS: '0',
  LOG_LEVEL: 'warn',
  SLB_SECRET_KEY: Buffer.alloc(32, 1).toString('base64'),
};
const api = start([join(root, 'apps/api/dist/main.js')], {
  ...apiEnv,
  PORT: String(apiPort),
  SLB_DB_PATH: join(dir, 'slb.db'),
});
const apiUrl = `http://127.0.0.1:${apiPort}`;
const database = await pgDatabase();
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
// The replicas' health queue and Redis prefixes are this run's own, deleted at the end with the cluster's keys.
const runId = `bench-api-${process.pid}-${Date.now()}`;
const pgApi = async (name) => {
  const port = await freePort();
  const child = start([join(root, 'apps/api/dist/main.js')], {
    ...apiEnv,
    PORT: String(port),
    SLB_DB_PATH: join(dir, 'unused.db'),
    SLB_DATABASE_URL: database.url,
    REDIS_URL,
    SLB_INSTANCE_ID: `${runId}-${name}`,
    SLB_HEALTH_QUEUE: runId,
    SLB_HEALTH_KEY_PREFIX: `${runId}:health`,
    SLB_METRICS_KEY_PREFIX: `${runId}:metrics`,
  });
  return { child, url: `http://127.0.0.1:${port}` };
};
const pgA = database ? await pgApi('a') : null;
const apiPg = pgA?.child ?? null;
const apiPgUrl = pgA?.url ?? '';
let pgB = null;
const clusterIds = new Set();
try {
  await waitFor(`${apiUrl}/healthz`);
  if (pgA) {
    await waitFor(`${apiPgUrl}/healthz`);
    clusterIds.add((await (await fetch(`${apiPgUrl}/control/v1/namespace`)).json()).clusterId);
  }
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const lb = await (
    await fetch(`${apiUrl}/v1/load-balancers`, { method: 'POST', headers, body: '{"name":"bench"}' })
  ).json();
  const lbPg = apiPg
    ? await (await fetch(`${apiPgUrl}/v1/load-balancers`, { method: 'POST', headers, body: '{"name":"bench"}' })).json()
    : null;
  const bare = start([join(root, 'bench/bare-fastify.mjs')], { PORT: String(barePort), BODY: JSON.stringify(lb) });
  const bareUrl = `http://127.0.0.1:${barePort}`;
  try {
    await waitFor(`${bareUrl}/healthz`);
    console.error(`warming up, then ${DURATION}s per case with ${CONNECTIONS} connections`);
    await run({ url: `${apiUrl}/v1/load-balancers/${lb.id}`, headers, duration: 2 });
    if (lbPg) await run({ url: `${apiPgUrl}/v1/load-balancers/${lbPg.id}`, headers, duration: 2 });
    // Rounds alternate the API and the reference, so drift on a shared machine hits both alike; medians.
    const ROUNDS = Number(process.env.ROUNDS ?? 3);
    const cases = {
      readApi: [{ url: `${apiUrl}/v1/load-balancers/${lb.id}`, headers }, api],
      readBare: [{ url: `${bareUrl}/lb` }, bare],
      createApi: [{ url: `${apiUrl}/v1/load-balancers`, method: 'POST', headers, body: '{"name":"bench"}' }, api],
      createBare: [
        {
          url: `${bareUrl}/lb`,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"name":"bench"}',
        },
        bare,
      ],
      ...(apiPg
        ? {
            readPg: [{ url: `${apiPgUrl}/v1/load-balancers/${lbPg.id}`, headers }, [apiPg, postmaster()]],
            createPg: [
              { url: `${apiPgUrl}/v1/load-balancers`, method: 'POST', headers, body: '{"name":"bench"}' },
              [apiPg, postmaster()],
            ],
          }
        : {}),
    };
    // The second replica runs only for its own rows: alive, it makes every read on the first one ask Redis for
    // its nodes' part of the LB's status (RuntimeShare), which the one-replica rows must not pay.
    const replicaCases = (b) => ({
      ...(b
        ? {
            readPg2: [
              [apiPgUrl, b.url].map((base) => ({ url: `${base}/v1/load-balancers/${lbPg.id}`, headers })),
              [apiPg, b.child, postmaster()],
            ],
            createPg2: [
              [apiPgUrl, b.url].map((base) => ({
                url: `${base}/v1/load-balancers`,
                method: 'POST',
                headers,
                body: '{"name":"bench"}',
              })),
              [apiPg, b.child, postmaster()],
            ],
          }
        : {}),
    });
    const runs = {};
    const rounds = async (list) => {
      for (let round = 0; round < ROUNDS; round++) {
        for (const [name, [opts, server]] of Object.entries(list)) {
          runs[name] = [...(runs[name] ?? []), await measured(opts, server)];
        }
      }
    };
    await rounds(cases);
    if (apiPg && process.env.REPLICAS !== '0') {
      pgB = await pgApi('b');
      await waitFor(`${pgB.url}/healthz`);
      await run({ url: `${pgB.url}/v1/load-balancers/${lbPg.id}`, headers, duration: 2 });
      await rounds(replicaCases(pgB));
    }
    const median = (list) =>
      [...list].sort((a, b) => a.requests.average - b.requests.average)[Math.floor(list.length / 2)];
    const results = Object.fromEntries(Object.entries(runs).map(([k, list]) => [k, median(list)]));
    const pct = (x) => (Number.isFinite(x) ? x.toFixed(0) : '–');
    const row = (name, r) =>
      `${name.padEnd(34)} ${String(Math.round(r.requests.average)).padStart(8)} req/s   p50 ${r.latency.p50} ms   p99 ${r.latency.p99} ms   non-2xx ${r.non2xx}   errors ${r.errors}   ` +
      `autocannon CPU ${pct(r.cpu.genPct)}%, server CPU ${pct(r.cpu.targetPct)}% (${r.cpu.limit}), server ${r.cpu.cpuUs.toFixed(0)} µs/req, load ${r.cpu.load1.toFixed(2)}`;
    console.log(
      `\nAPI benchmark (median of ${ROUNDS} alternating rounds of ${DURATION}s, ${CONNECTIONS} connections, servers ${hasTaskset ? 'on CPU 1' : 'unpinned'})`,
    );
    console.log(row('GET /v1/load-balancers/{id}', results.readApi));
    console.log(row('bare fastify GET (same JSON)', results.readBare));
    console.log(row('POST /v1/load-balancers', results.createApi));
    console.log(row('bare fastify POST (same JSON)', results.createBare));
    if (results.readPg) {
      console.log(row('GET /v1/load-balancers/{id}, PostgreSQL', results.readPg));
      console.log(row('POST /v1/load-balancers, PostgreSQL', results.createPg));
    }
    if (results.readPg2) {
      console.log(row('GET, PostgreSQL, two replicas', results.readPg2));
      console.log(row('POST, PostgreSQL, two replicas', results.createPg2));
    }
    const read = compare(results.readApi.cpu, results.readBare.cpu);
    const create = compare(results.createApi.cpu, results.createBare.cpu);
    console.log(`\nread   (API / bare): ${verdict(read.ratio, 'bare fastify', { min: 0.5 }, read.basis, 'req')}`);
    console.log(
      `create (API / bare): ${create.ratio.toFixed(2)}× bare fastify${create.basis === 'CPU per unit' ? ' by CPU/req' : ''} (no goal)`,
    );
    if (results.readPg) {
      const reads = compare(results.readPg.cpu, results.readApi.cpu);
      const creates = compare(results.createPg.cpu, results.createApi.cpu);
      console.log(`read   (PostgreSQL / SQLite): ${verdict(reads.ratio, 'SQLite', { min: 0.5 }, reads.basis, 'req')}`);
      const by = creates.basis === 'CPU per unit' ? ' by CPU/req' : '';
      console.log(`create (PostgreSQL / SQLite): ${creates.ratio.toFixed(2)}× SQLite${by} (no goal)`);
    }
    if (results.readPg2) {
      // One core for both replicas: by CPU per request unless both rows saturated it.
      for (const [what, two, one] of [
        ['read  ', results.readPg2, results.readPg],
        ['create', results.createPg2, results.createPg],
      ]) {
        const c = compare(two.cpu, one.cpu);
        const by = c.basis === 'CPU per unit' ? ' by CPU/req' : '';
        console.log(`${what} (two replicas / one, PostgreSQL): ${c.ratio.toFixed(2)}× one replica${by} (no goal)`);
      }
    }
  } finally {
    bare.kill('SIGTERM');
  }
} finally {
  for (const child of [api, apiPg, pgB?.child].filter(Boolean)) {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
  }
  if (database) {
    await deleteRedisKeys(REDIS_URL, [`bull:${runId}:*`, `${runId}:*`, ...[...clusterIds].map((id) => `${id}:*`)]);
  }
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
}
