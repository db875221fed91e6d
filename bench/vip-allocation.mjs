#!/usr/bin/env node
// What a load balancer create costs as its address pool fills: the API in process, its pool holding N VIPs
// (rows written straight into its SQLite file, then the API restarted on it), then CREATES creates through
// the API, timed by this process's CPU. Run it on two builds to compare them (issue #22: the VIP pick read
// and parsed every VIP of the pool on every create):
//   npm run build && node bench/vip-allocation.mjs                 (SIZES=100,1000,10000,50000 CREATES=200)
//   API_DIST=/path/to/other/checkout/apps/api/dist node bench/vip-allocation.mjs
// GAPS=1 deletes one VIP in a hundred (with no hold) before the creates, so they fill gaps rather than
// go on above the highest. Everything runs in this one process: its CPU is the API's.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const SIZES = (process.env.SIZES ?? '100,1000,10000,50000').split(',').map(Number);
const CREATES = Number(process.env.CREATES ?? 200);
const GAPS = process.env.GAPS === '1';
const dist = resolve(process.env.API_DIST ?? new URL('../apps/api/dist', import.meta.url).pathname);
const { buildApp } = await import(pathToFileURL(join(dist, 'app.js')).href);
const ADMIN = 'bench-admin-token-0123456789';
const POOL = '10.64.0.0/16'; // 65,534 addresses: room for the largest size and its creates

async function start(dbPath) {
  const app = await buildApp({ dbPath, adminToken: ADMIN, addressPools: [POOL], vipHoldSeconds: 0 });
  await app.ready();
  return app;
}

async function call(app, token, method, url, body) {
  const res = await app.inject({ method, url, payload: body, headers: { authorization: `Bearer ${token}` } });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.statusCode === 204 ? null : res.json();
}

/** A pool of `size` VIPs: one LB made by the API, the rest copies of its row with the next addresses. */
async function seed(dbPath, size) {
  const app = await start(dbPath);
  const tenant = await call(app, ADMIN, 'POST', '/v1/tenants', { name: 'bench' });
  await call(app, ADMIN, 'PATCH', `/v1/tenants/${tenant.id}/quotas`, { loadBalancers: 100_000 });
  const { token } = await call(app, ADMIN, 'POST', `/v1/tenants/${tenant.id}/tokens`, { role: 'member' });
  await call(app, token, 'POST', '/v1/load-balancers', { name: 'lb-0' });
  const sqlite = app.store.sqlite;
  const template = sqlite.prepare('SELECT * FROM load_balancers').get();
  // Written as a build from before address_offset would: the API fills it at its next start.
  const columns = Object.keys(template).filter((c) => c !== 'address_offset');
  const insert = sqlite.prepare(
    `INSERT INTO load_balancers (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`,
  );
  sqlite.transaction(() => {
    for (let i = 1; i < size; i++) {
      const address = `10.64.${(i + 1) >> 8}.${(i + 1) & 255}`;
      insert.run({ ...template, id: `lb-${String(i).padStart(20, '0')}`, name: `lb-${i}`, address });
    }
  })();
  if (GAPS) sqlite.prepare("DELETE FROM load_balancers WHERE id LIKE 'lb-%' AND rowid % 100 = 50").run();
  await app.close();
  return token;
}

console.log(
  `# vip-allocation: ${CREATES} creates per size, pool ${POOL}, gaps ${GAPS ? 'yes' : 'no'}, API from ${dist}`,
);
console.log('| VIPs in the pool | CPU µs per create | wall µs per create | load average |');
console.log('| ---: | ---: | ---: | ---: |');
for (const size of SIZES) {
  const dir = mkdtempSync(join(tmpdir(), 'slb-bench-vips-'));
  try {
    const dbPath = join(dir, 'slb.db');
    const token = await seed(dbPath, size);
    const app = await start(dbPath);
    for (let i = 0; i < 10; i++) await call(app, token, 'POST', '/v1/load-balancers', { name: `warm-${i}` });
    const cpu = process.cpuUsage();
    const wall = performance.now();
    for (let i = 0; i < CREATES; i++) await call(app, token, 'POST', '/v1/load-balancers', { name: `new-${i}` });
    const used = process.cpuUsage(cpu);
    const perCreate = (used.user + used.system) / CREATES;
    const wallPer = ((performance.now() - wall) * 1000) / CREATES;
    console.log(`| ${size} | ${perCreate.toFixed(0)} | ${wallPer.toFixed(0)} | ${loadavg()[0].toFixed(1)} |`);
    await app.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
