/** The printed report: one row per figure of the run. */
import { readFileSync } from 'node:fs';
import { describeApiRestart } from './api-restart.mjs';
import {
  CONCURRENCY,
  elapsed,
  HEALTH,
  HTTP_PER_LB,
  L4,
  L7,
  LBS,
  LISTENERS,
  NODES_DURING_CREATE,
  REST_S,
  SERVERS,
  started,
} from './config.mjs';
import { apiWarnings, nodes, offline } from './fleet.mjs';
import { describeAftermath, fmtMiB, fmtMs } from './format.mjs';
import { benchLag, percentile, usage } from './processes.mjs';

export function report(apiProc, results, loadAtStart) {
  const apiEnd = usage(apiProc.child.pid);
  const s = results.seed;
  const loadAtEnd = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const rows = [
    [
      'fleet',
      `${LBS} LBs, ${LBS * LISTENERS} listeners (${LBS * HTTP_PER_LB} http), ${LBS * SERVERS} servers; ${L4} L4 + ${L7} L7 nodes; health checks ${HEALTH ? 'on' : 'off'}`,
    ],
    [
      'create through the API',
      `${fmtMs(s.createMs)}, ${s.createRequests} requests, ${((s.createRequests * 1000) / s.createMs).toFixed(0)} req/s at ${CONCURRENCY} in flight, nodes ${NODES_DURING_CREATE ? 'connected' : 'not started'}`,
    ],
    [
      'request latency while creating',
      `p50 ${fmtMs(percentile(s.createLatencies, 50))}, p99 ${fmtMs(percentile(s.createLatencies, 99))}, max ${fmtMs(Math.max(...s.createLatencies))}`,
    ],
    [
      'GET /healthz while creating (2/s)',
      `p50 ${fmtMs(percentile(s.healthz, 50))}, max ${fmtMs(Math.max(...s.healthz))}`,
    ],
    ['last write → every node converged', fmtMs(s.convergeMs)],
    [
      'API CPU while creating',
      `${(s.apiAfter.cpuS - s.apiBefore.cpuS).toFixed(1)} s (${((((s.apiAfter.cpuS - s.apiBefore.cpuS) * 1000) / (s.createMs + s.convergeMs)) * 100).toFixed(0)}% of a core)`,
    ],
    [
      'API at the end',
      `RSS ${fmtMiB(apiEnd.rssMiB)} (peak ${fmtMiB(apiEnd.hwmMiB)}), ${apiEnd.cpuS.toFixed(1)} CPU s in all`,
    ],
    ['SQLite file (+WAL) after seeding', `${(s.dbBytes / 1e6).toFixed(1)} MB`],
  ];
  for (const p of nodes) {
    const b = s.nodesBefore.get(p.name);
    const a = s.nodesAfter.get(p.name);
    if (a && b)
      rows.push([
        `${p.name} while creating`,
        `${(a.cpuS - b.cpuS).toFixed(1)} CPU s; RSS ${fmtMiB(a.rssMiB)} (peak ${fmtMiB(a.hwmMiB)})`,
      ]);
  }
  for (const j of results.joins) {
    rows.push([
      `${j.node} fresh join (full snapshot)`,
      `${(j.snapshotBytes / 1e6).toFixed(1)} MB, ${j.listeners} listeners; start → connected ${fmtMs(j.connectMs)}, → acked ${fmtMs(j.ackMs)} (API saw it at ${fmtMs(j.ackedAtApi ?? Number.NaN)}); connected → apply starts ${fmtMs(j.deliverMs)}, apply ${fmtMs(j.applyMs)}; RSS ${fmtMiB(j.rssMiB)} (peak ${fmtMiB(j.hwmMiB)}), ${j.cpuS.toFixed(1)} CPU s; API ${j.apiCpuS.toFixed(1)} CPU s; fleet settled ${fmtMs(j.settledMs)}; ${describeAftermath(j)}`,
    ]);
  }
  for (const r of results.restarts) {
    rows.push([
      `${r.node} restart`,
      `old process exited ${fmtMs(r.stopMs)} after SIGTERM; saved snapshot (${r.savedListeners} listeners) served ${fmtMs(r.savedMs)}, resync (${r.resumed ? 'resumed: a delta' : 'whole config'}) acked ${fmtMs(r.resyncMs)} (apply ${fmtMs(r.applyMs)}); RSS ${fmtMiB(r.rssMiB)} (peak ${fmtMiB(r.hwmMiB)}), ${r.cpuS.toFixed(1)} CPU s; fleet settled ${fmtMs(r.settledMs)}; ${describeAftermath(r)}`,
    ]);
  }
  if (results.apiRestart) rows.push(['API restart (kill -9)', describeApiRestart(results.apiRestart)]);
  if (results.edge.duplicatePort) {
    const d = results.edge.duplicatePort;
    rows.push(['listener port already used on the node', `listener ${d.refused}; the first owner ${d.lb0Status}`]);
  }
  if (results.edge.overLimit) {
    const o = results.edge.overLimit;
    rows.push(['10,001st listener in the fleet', `listener ${o.refused}`]);
  }
  if (results.edge.error) rows.push(['edge probes', `failed: ${results.edge.error}`]);
  if (results.rested) {
    rows.push([`nodes' RSS after ${REST_S} s at rest`, results.rested.map(([n, m]) => `${n} ${fmtMiB(m)}`).join(', ')]);
  }
  rows.push(['load average (1/5/15 min)', `start ${loadAtStart}, end ${loadAtEnd}`]);
  rows.push(['bench process lag (max)', `${fmtMs(benchLag.max)} (probe latencies include it)`]);
  rows.push([
    'nodes the API saw offline (whole run)',
    offline.length
      ? offline
          .map((o) => `${o.node} at +${fmtMs(o.from - started)} for ${fmtMs((o.to ?? Date.now()) - o.from)}`)
          .join('; ')
      : 'none',
  ]);
  const warnings = apiWarnings(apiProc);
  if (Object.keys(warnings).length > 0) rows.push(['API warnings', JSON.stringify(warnings)]);
  for (const p of nodes) {
    const w = apiWarnings(p);
    if (Object.keys(w).length > 0) rows.push([`${p.name} warnings`, JSON.stringify(w)]);
  }
  const width = Math.max(...rows.map((r) => r[0].length));
  console.log(`\nscale (${elapsed(started)} in all)`);
  for (const [k, v] of rows) console.log(`  ${k.padEnd(width)}  ${v}`);
}
