import type { Scheduler, SchedulerOptions } from './scheduler.js';

/**
 * `wlc`: LVS's weighted least connections. Picks the backend with the smallest load/weight, compared by
 * cross-multiplication (load_a * weight_b < load_b * weight_a) to avoid division and float ties. Equal
 * ratios go to the first candidate after the previous pick, so idle backends share a burst instead of the
 * first one taking it all until its counter moves.
 */
export function createWeightedLeastConnections(options: SchedulerOptions): Scheduler {
  const { backends } = options;
  const load = options.load ?? (() => 0);
  const n = backends.length;
  let start = 0;
  return {
    kind: 'wlc',
    pick() {
      let best = -1;
      let bestLoad = 0;
      let bestWeight = 0;
      for (let k = 0; k < n; k++) {
        const i = start + k < n ? start + k : start + k - n;
        const w = backends[i]!.weight;
        if (w <= 0) continue;
        const l = load(i);
        if (best < 0 || l * bestWeight < bestLoad * w) {
          best = i;
          bestLoad = l;
          bestWeight = w;
        }
      }
      if (best >= 0) start = best + 1 === n ? 0 : best + 1;
      return best;
    },
  };
}
