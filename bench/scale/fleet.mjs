/** The L4 and L7 nodes: their start, what their logs say, when the fleet has converged, and the API's view of them. */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { nodeArgs } from '../node-args.mjs';
import { allLbs, api, auth } from './api-client.mjs';
import {
  checkTime,
  dir,
  HTTP_PER_LB,
  L4,
  L4_ADDR,
  L7_ADDR,
  LBS,
  LISTENERS,
  log,
  NODE_TOKEN,
  redisEnv,
  root,
  runId,
  sleep,
} from './config.mjs';
import { start } from './processes.mjs';

export const nodes = [];
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
export async function savedSnapshotBytes(proc) {
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

export const expectedListeners = (kind) => (kind === 'l4' ? LBS * LISTENERS : LBS * HTTP_PER_LB);
export function startNode(kind, n) {
  const env = nodeEnv(kind, n);
  const proc = start(`${kind}-${n}`, join(root, `apps/${kind}-node/dist/main.js`), env, nodeArgs);
  Object.assign(proc, { kind, n, id: env.SLB_NODE_ID, stateDir: env.SLB_STATE_DIR });
  return proc;
}
export const activeStandby = (proc) => proc.lines.some((l) => l.msg === 'VIPs carried active-standby');
export const controlApplies = (proc) =>
  proc.lines.filter((l) => l.msg === 'config applied' && typeof l.applyMs === 'number');

/** Waits for a log line of `proc` (from line `from` on) matching `match`; fails on exit or after `timeoutMs`. */
export async function waitLine(proc, match, from, what, timeoutMs = 300_000) {
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
export async function waitConverged(what, timeoutMs = 600_000) {
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
export const offline = [];
export function watchNodes() {
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
export const offlineIn = (from, to) => offline.filter((o) => o.from >= from && o.from <= to);

export const apiWarnings = (proc) => {
  const counts = {};
  for (const l of proc.lines) if (l.level >= 40) counts[l.msg] = (counts[l.msg] ?? 0) + 1;
  return counts;
};
/** Online → offline changes per node, as GET /v1/nodes showed them (issue #22: a join must not flap any). */
export const flapsIn = (from, to, stopped) => {
  const counts = Object.fromEntries(nodes.map((p) => [p.name, 0]));
  // The stopped node's own offline spell, seen 3 s (+ a poll) after the bench stopped it, is no flap.
  let stop = offlineIn(from, to).find((o) => o.node === stopped && o.from - from <= 5000);
  for (const o of offlineIn(from, to)) {
    if (o === stop) stop = undefined;
    else counts[o.node] = (counts[o.node] ?? 0) + 1;
  }
  return counts;
};
