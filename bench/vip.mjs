#!/usr/bin/env node
// VIP bench, loopback only: what carrying each LB on its own virtual IP costs and buys, in one run.
//
//   node bench/vip.mjs              # ~4 min: failover (active-active and active-standby), scale, sharing
//   KILLS=5 node bench/vip.mjs      # fewer SIGKILLs per failover row (default 20)
//   ONLY=scale node bench/vip.mjs   # one row: failover-aa, failover-as (with the 1,000 LBs row), scale or sharing
//   LBS=200 node bench/vip.mjs      # fewer LBs on one port (default 1,000)
//
// Rows:
// - failover, active-active: two l4-node processes (file mode, session sync over Redis) share one VIP:port
//   with SO_REUSEPORT, under steady TCP connections and UDP flows aimed at the VIP only; one of them is
//   SIGKILLed KILLS times (and started again). Counted: new connections refused or timed out (goal 0), those
//   the dying node had already accepted (lost with it: the goal excludes them), UDP flows that changed backend,
//   the longest gap between two successful connections.
// - failover, active-standby: the local cloud (API, health workers, two L4 and two L7 nodes; the L4 nodes run
//   with SLB_REUSE_PORT=off, as on Node 20): the node binding the VIP is SIGKILLed KILLS times (the other takes
//   the VIP over; the killed one comes back as standby). Per kill, the gap from the kill to the next
//   successful connection through the VIP; goal p99 ≤ 3 s.
// - 1,000 LBs on one port: created through that cloud's API, each with a TCP listener on the same port; time
//   to all active, how the VIPs spread over the two nodes, one connection to every VIP.
// - scale: one l4-node given 10,000 listeners, each on a VIP of its own (127.3.x.y) and the same port: time
//   from start to every listener bound, RSS after.
// - sharing: new connections/s (wrk, Connection: close, an HAProxy backend answering `ok`) through one VIP served
//   by one node, then by two nodes sharing it. Load generator and backend on CPU 0, the node(s) on CPU 1:
//   on this 2-core machine the two nodes share one core, so the row shows what sharing costs, not the
//   capacity a second host adds. Each node's share of the connections is printed (the kernel's spread).
//
// Active-active needs SO_REUSEPORT from the runtime (Node.js >= 22.12): the nodes run under NODE_AA, else
// this Node.js if it has it, else .ci/node24 (as `bash .ci/run` installs it). Installs haproxy and wrk with
// apt-get when missing (root). Every process it starts is stopped on exit.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { stopAllChildren } from '../test/chaos/cloud.mjs';

import { children, ONLY, ROOT, work } from './vip/context.mjs';
import { failoverActiveActive, failoverActiveStandby } from './vip/failover.mjs';
import { reusePortNode } from './vip/nodes.mjs';
import { scale } from './vip/scale.mjs';
import { sharing } from './vip/sharing.mjs';

async function main() {
  execFileSync('npx', ['tsc', '-b', 'apps/l4-node', 'apps/l7-node', 'apps/api', 'apps/health-worker'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  const aa = reusePortNode();
  if (!aa) console.log('active-active rows skipped: no Node.js >= 22.12 found (NODE_AA, this one, .ci/node24)');
  else console.log(`active-active nodes run on Node.js ${aa.version} (${aa.bin})`);
  const want = (row) => ONLY === undefined || ONLY === row;
  const rows = [];
  if (aa && want('failover-aa')) rows.push(await failoverActiveActive(aa));
  if (want('failover-as')) rows.push(...(await failoverActiveStandby()));
  if (want('scale')) rows.push(await scale(aa?.bin ?? process.execPath));
  if (aa && want('sharing')) rows.push(...(await sharing(aa)));
  for (const r of rows) {
    delete r._before;
    console.log(JSON.stringify(r));
  }
  const aaRow = rows.find((r) => r.row.startsWith('failover, active-active'));
  const asRow = rows.find((r) => r.row.startsWith('failover, active-standby'));
  if (aaRow) console.log(`active-active goal: 0 new connections refused → ${aaRow['TCP refused/timed out']}`);
  if (asRow) console.log(`active-standby goal: gap p99 ≤ 3000 ms → ${asRow['gap ms p50/p99/max'].split('/')[1]} ms`);
}

await main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await stopAllChildren().catch(() => {});
    rmSync(work, { recursive: true, force: true });
  });
