/** How the report writes durations, sizes and what happened around a join or a restart. */

export const describeAftermath = (a) =>
  `stalls: node ${fmtMs(a.nodeStall.max)}, API ${fmtMs(a.apiStall.max)}, other nodes ${fmtMs(a.otherStall.max)}; ` +
  `flaps (online → offline): ${describeFlaps(a.flaps)}; ` +
  `API saw offline: ${a.offline.length ? a.offline.join(', ') : 'none'}; ${a.applies} applies, ${a.drops} below the full set; ` +
  `RSS once settled: ${a.fleetRss.map(([n, m]) => `${n} ${fmtMiB(m)}`).join(', ')}` +
  (a.failed ? `; NOT SETTLED: ${a.failed}` : '');
const describeFlaps = (flaps) => {
  const total = Object.values(flaps).reduce((a, b) => a + b, 0);
  return total === 0
    ? 'none'
    : Object.entries(flaps)
        .filter(([, n]) => n > 0)
        .map(([name, n]) => `${name} ×${n}`)
        .join(', ');
};
export const fmtMs = (ms) =>
  ms === Number.POSITIVE_INFINITY
    ? 'no answer'
    : Number.isNaN(ms)
      ? '–'
      : ms >= 10_000
        ? `${(ms / 1000).toFixed(1)} s`
        : `${Math.round(ms)} ms`;
export const fmtMiB = (m) => `${m.toFixed(0)} MiB`;
