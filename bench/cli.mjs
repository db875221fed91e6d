#!/usr/bin/env node
// Measures `slb` start-to-output beside the floor it cannot beat (a bare `node` start) and a reference client
// (curl) asking the API the same thing, in one run, and prints ratios.
//   npm run build && node bench/cli.mjs     (RUNS=20 per row, LBS=50 load balancers listed)
// The API is pinned to CPU 1 and the clients to CPU 0 when `taskset` exists (2-core machines), so each row's
// time is the client's own start and work plus one answer from an API that is otherwise idle.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { quantile } from './bench-verdict.mjs';
import { freePort } from './free-port.mjs';

const RUNS = Number(process.env.RUNS ?? 20);
const LBS = Number(process.env.LBS ?? 50);
const GOAL_MS = 300;
const root = fileURLToPath(new URL('..', import.meta.url));
const TOKEN = 'bench-admin-token-0123456789';
const CLI = join(root, 'packages/cli/dist/bin.js');

const has = (cmd, args) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
const hasTaskset = has('taskset', ['-p', String(process.pid)]);
if (hasTaskset) execFileSync('taskset', ['-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });

const dir = mkdtempSync(join(tmpdir(), 'slb-bench-cli-'));
const port = await freePort();
const api = spawn(
  hasTaskset ? 'taskset' : process.execPath,
  [...(hasTaskset ? ['-c', '1', process.execPath] : []), join(root, 'apps/api/dist/main.js')],
  {
    env: {
      ...process.env,
      PORT: String(port),
      SLB_DB_PATH: join(dir, 'slb.db'),
      SLB_ADMIN_TOKEN: TOKEN,
      SLB_DNS_PORT: '0',
      SLB_RATE_LIMIT_RPS: '0',
      SLB_ADDRESS_POOLS: '127.1.93.0/24',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  },
);
const url = `http://127.0.0.1:${port}`;

/** Wall time of one child process from spawn to exit, in ms; fails the bench on a non-zero exit. */
function time(cmd, args, env = {}) {
  const started = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { env: { ...process.env, ...env }, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
}

try {
  for (let i = 0; ; i++) {
    if (
      await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (i > 100) throw new Error('the API did not come up');
    await new Promise((r) => setTimeout(r, 100));
  }
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  for (let i = 0; i < LBS; i++) {
    await fetch(`${url}/v1/load-balancers`, { method: 'POST', headers, body: JSON.stringify({ name: `bench-${i}` }) });
  }
  const env = { SLB_API_URL: url, SLB_TOKEN: TOKEN, NO_COLOR: '1' };
  const rows = [
    ['node -e 0 (runtime start, the floor)', process.execPath, ['-e', '0']],
    ...(has('curl', ['--version'])
      ? [
          [
            'curl GET /v1/load-balancers (reference)',
            'curl',
            ['-sf', '-H', `authorization: Bearer ${TOKEN}`, `${url}/v1/load-balancers?limit=500`],
          ],
        ]
      : []),
    ['slb lb list', process.execPath, [CLI, 'lb', 'list']],
    ['slb lb list -o json', process.execPath, [CLI, 'lb', 'list', '-o', 'json']],
    ['slb --help', process.execPath, [CLI, '--help']],
  ];
  console.error(
    `${RUNS} runs per row, ${LBS} load balancers listed${hasTaskset ? ', API on CPU 1, clients on CPU 0' : ''}`,
  );
  const results = [];
  for (const [name, cmd, args] of rows) {
    time(cmd, args, env); // warm the page cache
    const samples = Array.from({ length: RUNS }, () => time(cmd, args, env));
    results.push({ name, p50: quantile(samples, 0.5), p90: quantile(samples, 0.9) });
  }
  const floor = results[0].p50;
  console.log(`| run | p50 ms | p90 ms | × node start | goal |`);
  console.log(`|---|---|---|---|---|`);
  for (const r of results) {
    const goal = r.name.startsWith('slb lb list')
      ? r.p50 <= GOAL_MS
        ? `≤ ${GOAL_MS} ms: met`
        : `≤ ${GOAL_MS} ms: MISSED`
      : '';
    console.log(`| ${r.name} | ${r.p50.toFixed(0)} | ${r.p90.toFixed(0)} | ${(r.p50 / floor).toFixed(2)} | ${goal} |`);
  }
  console.log(
    `(each row is a whole process: start, one request where it makes one, output, exit; the client's CPU is the limit, the API answers in ~1 ms)`,
  );
} finally {
  api.kill();
  rmSync(dir, { recursive: true, force: true });
}
