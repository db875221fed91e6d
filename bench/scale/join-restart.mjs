/** The join and restart phases: each node in turn joins with a fresh state dir, then restarts from its saved snapshot. */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { call } from './api-client.mjs';
import { log, sleep } from './config.mjs';
import {
  activeStandby,
  controlApplies,
  expectedListeners,
  flapsIn,
  nodes,
  offlineIn,
  savedSnapshotBytes,
  startNode,
  waitConverged,
  waitLine,
} from './fleet.mjs';
import { describeAftermath, fmtMs } from './format.mjs';
import { stalls, stop, usage } from './processes.mjs';

const CONVERGE_MS = Number(process.env.CONVERGE_TIMEOUT_S ?? 180) * 1000;
/** Waits for the fleet to settle after a node's start; a timeout is a finding, not the end of the run. */
const settle = async (what, proc) => {
  try {
    await waitConverged(what, CONVERGE_MS);
    return { settledMs: Date.now() - proc.spawnedAt, failed: null };
  } catch (err) {
    log(`  ${what}: ${err.message}`);
    return { settledMs: Number.NaN, failed: err.message };
  }
};
/** What happened to the fleet while `proc` joined: stalls, nodes the API saw offline, listener swings. */
const aftermath = (apiProc, proc, from, to) => {
  const applies = controlApplies(proc);
  return {
    nodeStall: stalls([proc], from, to),
    apiStall: stalls([apiProc], from, to),
    otherStall: stalls(
      nodes.filter((p) => p !== proc),
      from,
      to,
    ),
    offline: offlineIn(from, to).map((o) => `${o.node} ${fmtMs((o.to ?? to) - o.from)}`),
    flaps: flapsIn(from, to, proc.name),
    fleetRss: nodes.map((p) => [p.name, usage(p.child.pid).rssMiB]),
    // A node that drops below the full set after having it was taken off its LBs and given them back.
    drops: applies.filter((l, i) => i > 0 && l.listeners < expectedListeners(proc.kind)).length,
    applies: applies.length,
  };
};

// ---- Fresh join: each node in turn stopped, its state dir wiped, started: the full snapshot over the channel.
export async function freshJoins(apiProc, results) {
  for (let k = 0; k < nodes.length; k++) {
    const old = nodes[k];
    const from = Date.now();
    await stop(old);
    // Its saved config goes, its credential stays: the node enrolled on its first join, and the API no
    // longer lets the shared token speak for it ("this node has its own credential").
    for (const f of readdirSync(old.stateDir))
      if (f !== 'credential.json') rmSync(join(old.stateDir, f), { force: true });
    const before = (await call('GET', `/v1/nodes/${old.id}`)).appliedConfigVersion;
    const apiCpu = usage(apiProc.child.pid).cpuS;
    const proc = startNode(old.kind, old.n);
    nodes[k] = proc;
    const connected = await waitLine(
      proc,
      (l) => l.msg === 'control channel connected',
      0,
      'channel connected',
      60_000,
    );
    const applied = await waitLine(
      proc,
      (l) => l.msg === 'config applied' && typeof l.applyMs === 'number',
      0,
      'the full snapshot applied',
    );
    if (applied.listeners !== expectedListeners(proc.kind) && !activeStandby(proc))
      log(
        `  ${proc.name}: first snapshot had ${applied.listeners} listeners, expected ${expectedListeners(proc.kind)}`,
      );
    let ackedAtApi = null;
    for (const until = Date.now() + 60_000; Date.now() < until; await sleep(50)) {
      const node = await call('GET', `/v1/nodes/${proc.id}`);
      if (node.appliedConfigVersion > before) {
        ackedAtApi = Date.now() - proc.spawnedAt;
        break;
      }
    }
    const u = usage(proc.child.pid);
    const settled = await settle(`after the fresh join of ${proc.name}`, proc);
    const snapshotBytes = settled.failed ? Number.NaN : await savedSnapshotBytes(proc);
    const join_ = {
      node: proc.name,
      connectMs: connected.time - proc.spawnedAt,
      ackMs: applied.time - proc.spawnedAt,
      ackedAtApi,
      applyMs: applied.applyMs,
      // Connected → the apply starts: the API compiles and sends, the node parses and validates.
      deliverMs: applied.time - connected.time - applied.applyMs,
      listeners: applied.listeners,
      snapshotBytes,
      rssMiB: u.rssMiB,
      hwmMiB: u.hwmMiB,
      cpuS: u.cpuS,
      apiCpuS: usage(apiProc.child.pid).cpuS - apiCpu,
      ...settled,
      ...aftermath(apiProc, proc, from, Date.now()),
    };
    results.joins.push(join_);
    log(
      `  fresh ${proc.name}: connected +${fmtMs(join_.connectMs)}, full snapshot (${(snapshotBytes / 1e6).toFixed(1)} MB, ${applied.listeners} listeners) acked +${fmtMs(join_.ackMs)} (apply ${fmtMs(applied.applyMs)}), seen by the API +${fmtMs(ackedAtApi ?? Number.NaN)}; fleet settled +${fmtMs(join_.settledMs)}; ${describeAftermath(join_)}`,
    );
  }
}

// ---- Restart: stopped (the saved snapshot flushed) and started again: saved snapshot first, then resync.
export async function restarts(apiProc, results) {
  for (let k = 0; k < nodes.length; k++) {
    const old = nodes[k];
    const from = Date.now();
    const stopMs = await stop(old);
    const proc = startNode(old.kind, old.n);
    nodes[k] = proc;
    const saved = await waitLine(
      proc,
      (l) => l.msg === 'serving the saved snapshot until the control plane answers',
      0,
      'the saved snapshot served',
    );
    const applied = await waitLine(
      proc,
      (l) => l.msg === 'config applied' && typeof l.applyMs === 'number',
      0,
      'the resync applied',
    );
    const u = usage(proc.child.pid);
    // The saved file is the old process's last applied config: its version names it.
    const savedListeners = controlApplies(old).findLast((l) => l.version === saved.version)?.listeners;
    const settled = await settle(`after the restart of ${proc.name}`, proc);
    const r = {
      node: proc.name,
      stopMs,
      savedListeners,
      savedMs: saved.time - proc.spawnedAt,
      resyncMs: applied.time - proc.spawnedAt,
      applyMs: applied.applyMs,
      // A resumed session is answered with a delta; otherwise the whole config comes again.
      resumed: applied.sent === 'delta',
      rssMiB: u.rssMiB,
      hwmMiB: u.hwmMiB,
      cpuS: u.cpuS,
      ...settled,
      ...aftermath(apiProc, proc, from, Date.now()),
    };
    results.restarts.push(r);
    log(
      `  restarted ${proc.name} (old one exited ${fmtMs(stopMs)} after SIGTERM): serving the saved snapshot (${savedListeners} listeners) +${fmtMs(r.savedMs)}, resync (${r.resumed ? 'resumed: a delta' : 'whole config'}) acked +${fmtMs(r.resyncMs)} (apply ${fmtMs(r.applyMs)}); fleet settled +${fmtMs(r.settledMs)}; ${describeAftermath(r)}`,
    );
  }
}
