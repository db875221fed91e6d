#!/usr/bin/env node
// The API's services on SQLite and on PostgreSQL side by side (issue 23): the same calls through the async
// store, in this process, against a SQLite file and a PostgreSQL database of their own. The API itself cannot
// start on PostgreSQL yet (its control hub still compiles on the SQLite connection), so this measures the
// layer that moved: creates of load balancers (quota check, VIP pick, insert, in one transaction) and reads
// of one (the prepared read every GET under an LB makes), one at a time and CONCURRENCY at once.
//   npm run build && node bench/store.mjs      (LBS=500 READS=20000 CONCURRENCY=16 SLB_TEST_PG_URL=postgres://…)
// Each row prints this process's CPU (the API's share) and PostgreSQL's (its backends, from /proc), and
// what limited it; the ratio row compares PostgreSQL with SQLite (goal: reads ≥ 0.5×).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

const LBS = Number(process.env.LBS ?? 500);
const READS = Number(process.env.READS ?? 20_000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);
const ADMIN_URL = process.env.SLB_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const root = new URL('..', import.meta.url).pathname;
const db = await import(join(root, 'packages/db/dist/index.js'));
const dbPg = await import(join(root, 'packages/db/dist/pg/index.js'));
const { createServices } = await import(join(root, 'apps/api/dist/services/index.js'));
const { Authenticator } = await import(join(root, 'apps/api/dist/services/auth.js'));

const TICK = 100; // clock ticks per second in /proc/*/stat (USER_HZ)

/** CPU seconds of every PostgreSQL process (the server's backends), from /proc. */
function postgresCpu() {
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      if (stat.slice(stat.indexOf('(') + 1, close) !== 'postgres') continue;
      const fields = stat.slice(close + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {}
  }
  return ticks / TICK;
}

const selfCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

async function adminQuery(text) {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

async function openEngine(name) {
  if (name === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'slb-bench-store-'));
    const open = db.openDatabase(join(dir, 'slb.db'));
    db.runMigrations(open.db, open.sqlite);
    const store = db.sqliteStore(open);
    const drop = async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    };
    return { store, drop };
  }
  const database = `slb_bench_${process.pid}`;
  await adminQuery(`CREATE DATABASE ${database}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${database}`;
  const store = await dbPg.openPgStore(url.toString(), { max: CONCURRENCY });
  const drop = async () => {
    await store.close();
    await adminQuery(`DROP DATABASE ${database} WITH (FORCE)`);
  };
  return { store, drop };
}

/** Runs `op(i)` `count` times, `parallel` at once; wall time, this process's CPU and PostgreSQL's. */
async function timed(count, parallel, op) {
  const cpu0 = selfCpu();
  const pg0 = postgresCpu();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) await op(next++);
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return {
    perSecond: count / seconds,
    selfUs: ((selfCpu() - cpu0) / count) * 1e6,
    pgUs: ((postgresCpu() - pg0) / count) * 1e6,
    seconds,
  };
}

function limit(row) {
  // 2 cores: a process near one core's worth of CPU per second is the limit.
  const self = (row.selfUs * row.perSecond) / 1e6;
  const server = (row.pgUs * row.perSecond) / 1e6;
  if (self > 0.85) return `this process (${Math.round(self * 100)}% of a core)`;
  if (server > 0.85) return `PostgreSQL (${Math.round(server * 100)}% of a core)`;
  return `round trips (process ${Math.round(self * 100)}%, PostgreSQL ${Math.round(server * 100)}%)`;
}

async function run(name) {
  const { store, drop } = await openEngine(name);
  try {
    const tenantId = 'ten-00000000000000000001';
    const at = new Date().toISOString();
    await store.write((q) =>
      q.insert(store.t.tenants).values({ id: tenantId, name: 'bench', createdAt: at, updatedAt: at }),
    );
    const authenticator = new Authenticator(store);
    const services = createServices({
      store,
      authenticator: () => authenticator,
      runtime: () => ({ status: 'active', addresses: [], nodes: [] }),
      backendPolicy: { defaultNetworks: ['10.0.0.0/8'], deny: [] },
    });
    await services.addressPools.seed(['10.64.0.0/16']);
    await services.quotas.update(tenantId, { loadBalancers: LBS * 2 });
    const auth = { tokenId: 'tok-bench', tenantId, role: 'member' };
    const ids = [];
    const creates = await timed(LBS, 1, async (i) => {
      ids.push((await services.loadBalancers.create(auth, { name: `lb-${i}` })).id);
    });
    const scope = { tenantId };
    const find = (i) => services.loadBalancers.find(scope, ids[(i * 7919) % ids.length]);
    await timed(Math.min(READS, 2000), CONCURRENCY, find); // warm-up
    const reads1 = await timed(READS, 1, find);
    const readsN = await timed(READS, CONCURRENCY, find);
    return { creates, reads1, readsN };
  } finally {
    await drop();
  }
}

const fmt = (row) =>
  `${Math.round(row.perSecond).toString().padStart(7)}/s   this process ${row.selfUs.toFixed(0).padStart(5)} µs/op   PostgreSQL ${row.pgUs.toFixed(0).padStart(5)} µs/op   limited by ${limit(row)}`;

console.log(
  `store bench: ${LBS} LB creates, ${READS} reads one at a time and ${CONCURRENCY} at once; load ${loadavg()[0].toFixed(2)}`,
);
const results = {};
for (const name of ['sqlite', 'postgres']) {
  results[name] = await run(name);
  const r = results[name];
  console.log(`${name.padEnd(8)} create         ${fmt(r.creates)}`);
  console.log(`${name.padEnd(8)} read           ${fmt(r.reads1)}`);
  console.log(`${name.padEnd(8)} read ×${String(CONCURRENCY).padEnd(8)} ${fmt(r.readsN)}`);
}
const ratio = (k) => results.postgres[k].perSecond / results.sqlite[k].perSecond;
console.log(
  `\nPostgreSQL / SQLite: create ${ratio('creates').toFixed(2)}×, read ${ratio('reads1').toFixed(2)}×, read ×${CONCURRENCY} ${ratio('readsN').toFixed(2)}× (goal: reads ≥ 0.5×) ${ratio('readsN') >= 0.5 ? 'MET' : 'MISS'}; load ${loadavg()[0].toFixed(2)}`,
);
process.exit(0);
