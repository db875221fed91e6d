import type { Scheduler, SchedulerOptions } from './scheduler.js';

/** `rr`: each backend with a positive weight in turn, ignoring weight values. */
export function createRoundRobin(options: SchedulerOptions): Scheduler {
  const eligible = options.backends.flatMap((b, i) => (b.weight > 0 ? [i] : []));
  let next = 0;
  return {
    kind: 'rr',
    pick() {
      if (eligible.length === 0) return -1;
      const idx = eligible[next]!;
      next = next + 1 === eligible.length ? 0 : next + 1;
      return idx;
    },
  };
}
