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
// REST_S (20: seconds at rest after the restarts, then the nodes' RSS again), PORT_BASE (first listener
// port, 10000), CONVERGE_TIMEOUT_S (per join/restart, 180), TIME_LIMIT_S (whole run, default 1800), LOG_DIR
// (keep each process's log there), API_RESTART=0 (skip killing and restarting the API after the node restarts). SERVER_GROUPS=1 puts 100 servers behind every listener:
// a ~76 MB L4 snapshot, which the L4 nodes of this build cannot hold (heap out of memory at 4 GB).
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { api, apiPort } from './scale/api-client.mjs';
import { apiRestart } from './scale/api-restart.mjs';
import {
  ADMIN,
  API_RESTART,
  deleteRedisKeys,
  dir,
  EDGE,
  GROUPS,
  HEALTH,
  HTTP_PER_LB,
  L4,
  L7,
  LBS,
  LISTENERS,
  log,
  NODE_TOKEN,
  NODES_DURING_CREATE,
  REST_S,
  redisEnv,
  root,
  SERVERS,
  sleep,
  TIME_LIMIT_MS,
} from './scale/config.mjs';
import { seed } from './scale/create.mjs';
import { edgeProbes } from './scale/edge.mjs';
import { nodes, startNode, waitLine, watchNodes } from './scale/fleet.mjs';
import { freshJoins, restarts } from './scale/join-restart.mjs';
import { children, probe, start, stop, usage } from './scale/processes.mjs';
import { report } from './scale/report.mjs';

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
  const startApi = async () => {
    const proc = start('api', join(root, 'apps/api/dist/main.js'), {
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
      if (i > 200 || proc.exited)
        throw new Error(`the API did not start:\n${proc.lines.map((l) => JSON.stringify(l)).join('\n')}`);
      await sleep(100);
    }
    probe(proc, `${api}/healthz`);
    return proc;
  };
  let apiProc = await startApi();
  let stopWatching = async () => {};
  const startNodes = async () => {
    for (let n = 0; n < L4; n++) nodes.push(startNode('l4', n));
    for (let n = 0; n < L7; n++) nodes.push(startNode('l7', n));
    for (const p of nodes)
      await waitLine(p, (l) => l.msg === 'control channel connected', 0, 'channel connected', 30_000);
    stopWatching = watchNodes();
  };
  if (NODES_DURING_CREATE) await startNodes();

  await seed(apiProc, results, startNodes);

  await freshJoins(apiProc, results);

  await restarts(apiProc, results);

  if (API_RESTART) apiProc = await apiRestart(apiProc, results, startApi);

  // ---- At rest: "RSS once settled" is read a second after a join, before V8 has given its garbage back.
  if (REST_S > 0) {
    await sleep(REST_S * 1000);
    results.rested = nodes.map((p) => [p.name, usage(p.child.pid).rssMiB]);
    log(`  after ${REST_S} s at rest: ${results.rested.map(([n, m]) => `${n} ${m.toFixed(0)} MiB`).join(', ')}`);
  }

  // ---- Edge probes: a listener port another LB on the same node already uses, and one listener too many.
  if (EDGE) await edgeProbes(results);

  await stopWatching();
  // ---- Report.
  report(apiProc, results, loadAtStart);
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
