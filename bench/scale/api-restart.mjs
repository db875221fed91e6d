/** The API killed (kill -9) and started again on its database: what each node is sent, and how long until all settle. */
import { log } from './config.mjs';
import { nodes, waitConverged, waitLine } from './fleet.mjs';
import { fmtMiB, fmtMs } from './format.mjs';
import { stalls, stop, usage } from './processes.mjs';

const CONVERGE_MS = Number(process.env.CONVERGE_TIMEOUT_S ?? 180) * 1000;

/** Returns the new API process; `startApi` starts one and resolves once it answers /healthz. */
export async function apiRestart(apiProc, results, startApi) {
  const marks = nodes.map((p) => p.lines.length);
  const from = Date.now();
  await stop(apiProc, 'SIGKILL');
  const next = await startApi();
  const upMs = Date.now() - next.spawnedAt;
  const perNode = [];
  for (const [k, proc] of nodes.entries()) {
    // The first config the node applies from the new process: an empty delta when it held what that process
    // would send it (digest), else its whole config.
    const applied = await waitLine(
      proc,
      (l) => l.msg === 'config applied' && typeof l.applyMs === 'number',
      marks[k],
      'a config from the restarted API',
      CONVERGE_MS,
    );
    perNode.push({
      node: proc.name,
      sent: applied.sent ?? 'snapshot',
      ackMs: applied.time - next.spawnedAt,
      applyMs: applied.applyMs,
      rssMiB: usage(proc.child.pid).rssMiB,
    });
  }
  let settledMs = Number.NaN;
  let failed = null;
  try {
    await waitConverged('after the API restart', CONVERGE_MS);
    settledMs = Date.now() - next.spawnedAt;
  } catch (err) {
    failed = err.message;
    log(`  API restart: ${failed}`);
  }
  const api = usage(next.child.pid);
  results.apiRestart = {
    upMs,
    nodes: perNode,
    settledMs,
    failed,
    apiCpuS: api.cpuS,
    apiRssMiB: api.rssMiB,
    nodeStall: stalls(nodes, from, Date.now()).max,
  };
  log(`  API restarted: ${describeApiRestart(results.apiRestart)}`);
  return next;
}

export const describeApiRestart = (r) =>
  `answering ${fmtMs(r.upMs)} after its start; ` +
  r.nodes
    .map((n) => `${n.node} ${n.sent} acked +${fmtMs(n.ackMs)} (apply ${fmtMs(n.applyMs)}, RSS ${fmtMiB(n.rssMiB)})`)
    .join(', ') +
  `; fleet settled +${fmtMs(r.settledMs)}; API ${r.apiCpuS.toFixed(1)} CPU s, RSS ${fmtMiB(r.apiRssMiB)}; longest node stall ${fmtMs(r.nodeStall)}` +
  (r.failed ? `; NOT SETTLED: ${r.failed}` : '');
