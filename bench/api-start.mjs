#!/usr/bin/env node
// How long the API takes from its process start to answering /healthz, with the drizzle-orm import shortcut
// (apps/api/src/startup/drizzle-imports.ts) and without it (SLB_DRIZZLE_IMPORTS=node), in alternating rounds on
// one database. Runs the API under this script's Node: run it under each Node to compare them.
//   npm run build && node bench/api-start.mjs     (ROUNDS=7)
// Each row prints the API process's CPU until it answered beside the wall time: on a busy machine the wall
// time grows with the run queue, the CPU less so.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.mjs';
import { cpuSeconds } from './proc-cpu.mjs';

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'slb-bench-start-'));
const MODES = { shortcut: {}, node: { SLB_DRIZZLE_IMPORTS: 'node' } };

/** Starts the API, waits for /healthz (polled every 5 ms, up to 30 s), and returns wall and CPU ms, then kills it. */
async function startOnce(extraEnv) {
  const port = await freePort();
  const started = performance.now();
  const api = spawn(process.execPath, [join(root, 'apps/api/dist/main.js')], {
    env: {
      ...process.env,
      PORT: String(port),
      SLB_DB_PATH: join(dir, 'slb.db'),
      SLB_ADMIN_TOKEN: 'bench-admin-token-0123456789',
      SLB_DNS_PORT: '0',
      LOG_LEVEL: 'warn',
      ...extraEnv,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    while (performance.now() - started < 30_000) {
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return { wallMs: performance.now() - started, cpuMs: cpuSeconds([api]) * 1000 };
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error('the API did not answer within 30 s');
  } finally {
    api.kill('SIGKILL');
    await new Promise((r) => (api.exitCode !== null ? r() : api.once('exit', r)));
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (xs) => `${median(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;

try {
  console.error(`Node ${process.version}: one start to create the database, then ${ROUNDS} rounds of each mode`);
  await startOnce({});
  const runs = Object.fromEntries(Object.keys(MODES).map((m) => [m, { wallMs: [], cpuMs: [] }]));
  const load = [loadavg()[0]];
  for (let round = 0; round < ROUNDS; round++) {
    for (const [mode, env] of Object.entries(MODES)) {
      const { wallMs, cpuMs } = await startOnce(env);
      runs[mode].wallMs.push(wallMs);
      runs[mode].cpuMs.push(cpuMs);
    }
    console.error(`  round ${round + 1}/${ROUNDS} done`);
  }
  load.push(loadavg()[0]);
  console.log(`\nAPI start to /healthz answering, Node ${process.version}, median (min–max) of ${ROUNDS}, ms`);
  console.log('| drizzle-orm imports | wall | API CPU |');
  console.log('| --- | --- | --- |');
  for (const [mode, r] of Object.entries(runs)) console.log(`| ${mode} | ${fmt(r.wallMs)} | ${fmt(r.cpuMs)} |`);
  const ratio = median(runs.shortcut.wallMs) / median(runs.node.wallMs);
  console.log(
    `\nshortcut / node: ${ratio.toFixed(2)}× the wall time; load average ${load.map((l) => l.toFixed(1)).join(' → ')}`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
