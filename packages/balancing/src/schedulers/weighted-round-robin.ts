import type { Scheduler, SchedulerOptions } from './scheduler.js';

/**
 * `wrr`: nginx's smooth weighted round robin. Over any window of sum(weights) picks each backend is chosen
 * exactly `weight` times, and picks of a heavy backend are interleaved with the others instead of bunched
 * (5:1:1 gives a a b a c a a, not a a a a a b c), so a burst of new connections is spread too.
 */
export function createWeightedRoundRobin(options: SchedulerOptions): Scheduler {
  const { backends } = options;
  const weight = Int32Array.from(backends, (b) => Math.max(0, Math.trunc(b.weight)));
  const current = new Int32Array(backends.length);
  let total = 0;
  for (const w of weight) total += w;
  return {
    kind: 'wrr',
    pick() {
      if (total === 0) return -1;
      let best = -1;
      let bestValue = 0;
      for (let i = 0; i < weight.length; i++) {
        const w = weight[i]!;
        if (w === 0) continue;
        const c = current[i]! + w;
        current[i] = c;
        if (best < 0 || c > bestValue) {
          best = i;
          bestValue = c;
        }
      }
      current[best] = bestValue - total;
      return best;
    },
  };
}
