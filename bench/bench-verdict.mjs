// The arithmetic behind the benches' verdicts (issue #22): which side of a row was the bottleneck, the ratio that
// is fair to print for it, and whether that ratio meets its goal. Pure, so bench/bench-verdict.test.ts holds it.

/** Share of the cores a process set may use, at or above which it counts as saturated. */
export const SATURATED = 0.9;

/**
 * The CPUs of a taskset/cpuset list such as `0-3,6`.
 * @param {string} list
 * @returns {number[]}
 */
export function parseCpuList(list) {
  const cpus = [];
  for (const part of list.trim().split(',')) {
    if (part === '') continue;
    const [from, to = from] = part.split('-').map(Number);
    if (!Number.isInteger(from) || !Number.isInteger(to) || to < from) throw new Error(`bad CPU list '${list}'`);
    for (let c = from; c <= to; c++) cpus.push(c);
  }
  return cpus;
}

/**
 * CPU use over a window, in % of one core (200 = two cores busy).
 * @param {number} cpuSeconds user + system seconds used in the window
 * @param {number} wallSeconds the window
 */
export function cpuPercent(cpuSeconds, wallSeconds) {
  return wallSeconds > 0 ? (100 * cpuSeconds) / wallSeconds : Number.NaN;
}

/**
 * CPU microseconds per unit of work (request, connection, MB).
 * @param {number} cpuSeconds
 * @param {number} units
 */
export function cpuMicrosPer(cpuSeconds, units) {
  return units > 0 ? (cpuSeconds * 1e6) / units : Number.NaN;
}

/**
 * What limited a row. `generator-limited`: the load side (generator and whatever shares its cores, such as the
 * backend) used at least SATURATED of the cores it may use while the target did not, so the target had room to
 * spare and its throughput says little. `target-limited`: the target's cores were saturated. `unsaturated`:
 * neither was, so something else (foreign load on a shared machine, latency) held the row back.
 * @param {{ loadPct: number, loadCores: number, targetPct: number, targetCores: number }} row
 *   loadPct and targetPct in % of one core (as cpuPercent); *Cores the number of cores each may run on
 * @returns {'generator-limited' | 'target-limited' | 'unsaturated'}
 */
export function bottleneck({ loadPct, loadCores, targetPct, targetCores }) {
  const targetFull = targetPct >= SATURATED * 100 * targetCores;
  if (targetFull) return 'target-limited';
  if (loadPct >= SATURATED * 100 * loadCores) return 'generator-limited';
  return 'unsaturated';
}

/**
 * How a target compares with a reference, both higher-is-better. Throughput is the proxy's capacity only when its
 * core was saturated: when either row was generator-limited (its throughput is the generator's) or unsaturated
 * (on a shared machine, often its share of a contended core), the ratio is the CPU cost per unit of work instead
 * (reference µs ÷ target µs, so above 1 still means "the target does better").
 * @param {{ rate: number, cpuUs: number, limit: string }} target
 * @param {{ rate: number, cpuUs: number, limit: string }} reference
 * @returns {{ ratio: number, basis: 'throughput' | 'CPU per unit' }}
 */
export function compare(target, reference) {
  const byCpu = target.limit !== 'target-limited' || reference.limit !== 'target-limited';
  if (byCpu && Number.isFinite(target.cpuUs) && Number.isFinite(reference.cpuUs) && target.cpuUs > 0) {
    return { ratio: reference.cpuUs / target.cpuUs, basis: 'CPU per unit' };
  }
  return { ratio: reference.rate > 0 ? target.rate / reference.rate : Number.NaN, basis: 'throughput' };
}

/**
 * The comparison with the strongest of several references (the one giving the lowest ratio), e.g. "the best
 * plain Node proxy".
 * @param {{ rate: number, cpuUs: number, limit: string }} target
 * @param {{ name: string, rate: number, cpuUs: number, limit: string }[]} references
 * @returns {{ ratio: number, basis: 'throughput' | 'CPU per unit', name: string } | undefined}
 */
export function compareWithBest(target, references) {
  let best;
  for (const r of references) {
    const c = { ...compare(target, r), name: r.name };
    if (best === undefined || c.ratio < best.ratio || Number.isNaN(best.ratio)) best = c;
  }
  return best;
}

/**
 * The nearest-rank quantile `q` (0..1) of a list: the value at ⌊q·n⌋ of the sorted list, the largest for q = 1;
 * NaN for an empty one.
 */
export function quantile(values, q) {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** The median of a non-empty list (the mean of the middle two for an even count); NaN for an empty one. */
export function median(values) {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * A target against references measured in the same rounds: each round's ratio (compare, or compareWithBest over
 * several references), and their median. A round pairs rows taken minutes apart at most, so a slow spell of a
 * shared machine hits both sides of each ratio; the best round of each row alone can pair one row's good spell
 * with the other's bad one.
 * @param {{ name: string, rate: number, cpuUs: number, limit: string }[][]} rounds each round's rows
 * @param {(row: { name: string }) => boolean} isTarget
 * @param {(row: { name: string }) => boolean} isReference
 * @returns {{ ratios: number[], median: number, bases: string[] }} rounds missing either side are left out
 */
export function sameRoundRatios(rounds, isTarget, isReference) {
  const ratios = [];
  const bases = [];
  for (const rows of rounds) {
    const target = rows.find(isTarget);
    const c = target === undefined ? undefined : compareWithBest(target, rows.filter(isReference));
    if (c === undefined || !Number.isFinite(c.ratio)) continue;
    ratios.push(c.ratio);
    bases.push(c.basis);
  }
  return { ratios, median: median(ratios), bases };
}

/**
 * A ratio against its goal, as printed: `0.57× nginx (goal ≥ 0.8×) MISS`, with `by CPU/req` when the ratio
 * is a CPU-cost ratio. A goal with `max` is lower-is-better (latency: `1.4× haproxy p99 (goal ≤ 2×) ok`).
 * @param {number} ratio
 * @param {string} what e.g. `nginx`
 * @param {{ min?: number, max?: number }} goal
 * @param {string} [basis] `CPU per unit` adds its label
 * @param {string} [unit] what the CPU is per (`req`, `conn`, `MB`)
 */
export function verdict(ratio, what, goal, basis = 'throughput', unit = 'unit') {
  const by = basis === 'CPU per unit' ? ` by CPU/${unit}` : '';
  if (!Number.isFinite(ratio)) return `n/a ${what}${by}`;
  const met = goal.min !== undefined ? ratio >= goal.min : ratio <= (goal.max ?? Number.POSITIVE_INFINITY);
  const bound = goal.min !== undefined ? `≥ ${goal.min}×` : `≤ ${goal.max}×`;
  return `${ratio.toFixed(2)}× ${what}${by} (goal ${bound}) ${met ? 'ok' : 'MISS'}`;
}

/**
 * Where a bench's processes run: with taskset and two CPUs, the load side (generator, backends) on the first
 * and each proxy alone on the second, so every proxy gets the same core and rows compare; else nothing pinned,
 * every side on all the CPUs.
 * @param {number[]} allowed the CPUs this process may use (parseCpuList of its allowed list)
 * @param {boolean} taskset whether taskset is installed
 * @returns {{ cpus: number[], loadCpu: string | null, proxyCpu: string | null, loadCores: number, targetCores: number }}
 */
export function planPinning(allowed, taskset) {
  if (taskset && allowed.length >= 2) {
    return {
      cpus: allowed.slice(0, 2),
      loadCpu: String(allowed[0]),
      proxyCpu: String(allowed[1]),
      loadCores: 1,
      targetCores: 1,
    };
  }
  return { cpus: allowed, loadCpu: null, proxyCpu: null, loadCores: allowed.length, targetCores: allowed.length };
}
