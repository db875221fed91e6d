#!/usr/bin/env node
// One L7 node's apply of a fleet-sized snapshot (issue #22), in process: the built app (apps/l7-node/dist)
// applies LISTENERS HTTP listeners × SERVERS servers (the L7 share of bench/scale.mjs: 3 HTTP listeners per LB,
// sharing its server group), then the same config re-sent as new objects (a controller restart), then a
// delta changing one listener, then waits out the cleanup that follows. Says, for each step, how long it took
// and the longest time the event loop went without a turn (requests on the listeners already served wait that
// long), and the process's RSS and heap.
//   npm run build && node bench/l7-apply.mjs            (LISTENERS=3000 SERVERS=100 PER_GROUP=3 RUNS=3, each its own process)
// Knobs: DIST (the L7 node's built dist folder, apps/l7-node/dist: point it at a copy of an older build to
// compare), ADDRESS (127.78.0.21; every listener binds port 0 there, the kernel picks).
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const LISTENERS = Number(process.env.LISTENERS ?? 3000);
const SERVERS = Number(process.env.SERVERS ?? 100);
const PER_GROUP = Number(process.env.PER_GROUP ?? 3);
const RUNS = Number(process.env.RUNS ?? 3);
const ADDRESS = process.env.ADDRESS ?? '127.78.0.21';
const dist = pathToFileURL(
  `${resolve(process.env.DIST ?? new URL('../apps/l7-node/dist', import.meta.url).pathname)}/`,
);
const { createL7App } = await import(new URL('app.js', dist).href);
const { pino } = await import('pino');

const id = (prefix, n) => `${prefix}-${String(n).padStart(20, '0')}`;
const mib = (bytes) => Math.round(bytes / 2 ** 20);

function listener(n, version) {
  const g = Math.floor(n / PER_GROUP);
  const group = id('sg', g);
  return {
    id: id('lsn', n),
    loadBalancerId: id('lb', g),
    tenantId: id('tnt', 1),
    protocol: 'http',
    port: 0,
    directPort: 0,
    bindAddress: ADDRESS,
    scheduler: 'wrr',
    stickySession: null,
    xForwardedFor: true,
    idleTimeout: 15,
    requestTimeout: version,
    certificates: [],
    defaultServerGroupId: group,
    rules: [],
    serverGroups: [
      {
        id: group,
        backends: Array.from({ length: SERVERS }, (_, s) => ({
          serverId: id('srv', g * SERVERS + s),
          address: `127.0.${Math.floor(s / 200)}.${20 + (s % 200)}`,
          port: 40000 + (g % 1000),
          weight: 100,
          healthy: true,
        })),
      },
    ],
  };
}

const snapshot = (version, listeners) => ({ version, generatedAt: new Date().toISOString(), listeners });

/** Runs `work`, timing it and the longest stretch without an event-loop turn meanwhile. */
async function measured(work) {
  let last = performance.now();
  let gap = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    gap = Math.max(gap, now - last);
    last = now;
  }, 2);
  const from = performance.now();
  last = from;
  const result = await work();
  const to = performance.now();
  clearInterval(ticker);
  return { ms: Math.round(to - from), maxGapMs: Math.round(Math.max(gap, to - last)), result };
}

// Each run in its own process, so one run's garbage is not the next one's RSS.
if (process.argv[2] !== '--run') {
  for (let run = 1; run <= RUNS; run++) {
    const child = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--run', String(run)], {
      stdio: 'inherit',
    });
    if (child.status !== 0) process.exit(child.status ?? 1);
  }
  process.exit(0);
}

{
  const run = Number(process.argv[3]);
  const app = createL7App({ drainMs: 0, cleanupDelayMs: 1000, logger: pino({ level: 'silent' }) });
  // Memory as the node holds it: collected first (--expose-gc), and no snapshot kept here once applied.
  const memory = () => {
    globalThis.gc?.();
    return process.memoryUsage();
  };
  const fleet = (version) =>
    snapshot(
      version,
      Array.from({ length: LISTENERS }, (_, n) => listener(n, 10)),
    );
  let sent = fleet(1);
  const fresh = await measured(() => app.apply(sent));
  if (fresh.result.length > 0) throw new Error(`first apply: ${JSON.stringify(fresh.result[0])}`);
  sent = null;
  const afterFresh = memory();
  sent = fleet(2);
  const full = await measured(() => app.apply(sent));
  // A delta as the node runtime hands it over: the unchanged listeners are the very same objects.
  sent = snapshot(
    3,
    sent.listeners.map((l, n) => (n === 0 ? listener(0, 11) : l)),
  );
  const one = await measured(() => app.apply(sent));
  sent = null;
  // The cleanup of backend state, pools and metric series runs a second after the last apply.
  const cleanup = await measured(() => new Promise((r) => setTimeout(r, 1500)));
  const settled = memory();
  const row = {
    run,
    listeners: LISTENERS,
    backends: LISTENERS * SERVERS,
    firstApplyMs: fresh.ms,
    firstMaxGapMs: fresh.maxGapMs,
    resendApplyMs: full.ms,
    resendMaxGapMs: full.maxGapMs,
    deltaApplyMs: one.ms,
    cleanupMaxGapMs: cleanup.maxGapMs,
    rssAfterFirstMiB: mib(afterFresh.rss),
    heapAfterFirstMiB: mib(afterFresh.heapUsed),
    rssSettledMiB: mib(settled.rss),
    heapSettledMiB: mib(settled.heapUsed),
    load: loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
  };
  console.log(JSON.stringify(row));
  await app.close();
  process.exit(0);
}
