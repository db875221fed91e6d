import { Counter, type Registry } from 'prom-client';
import type { TransitionStats } from './transitions.js';

/**
 * `slb_api_health_transitions_total{outcome}`: what became of each entry read from the transition stream.
 * `implausible` and `invalid` count entries dropped as untrustworthy: a rise means a broken or forged writer.
 */
export function registerTransitionMetrics(registry: Registry, stats: TransitionStats): void {
  new Counter({
    name: 'slb_api_health_transitions_total',
    help: 'Health transition stream entries by outcome (stored, skipped, stale, invalid, implausible)',
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [outcome, count] of Object.entries(stats)) this.inc({ outcome }, count);
    },
  });
}
