import type { FlowKey, WeightedBackend } from '../types.js';

export type SchedulerKind = 'rr' | 'wrr' | 'wlc' | 'sch' | 'tch';

/**
 * Chooses a backend for a new flow. A scheduler is built for one backend list and rebuilt when the list
 * changes (that is when Maglev tables are computed), so `pick` stays cheap and allocation-free.
 */
export interface Scheduler {
  readonly kind: SchedulerKind;
  /** Index into the backend list the scheduler was built with, or -1 when no backend takes new flows. */
  pick(flow: FlowKey): number;
}

/** Options shared by every scheduler factory. */
export interface SchedulerOptions {
  /** The candidates, in the caller's order; weight 0 never takes a new flow. */
  readonly backends: readonly WeightedBackend[];
  /**
   * Current load of a backend (active connections), for `wlc`. The caller owns the counters so they
   * survive a scheduler rebuild. Default: every backend has load 0.
   */
  readonly load?: (index: number) => number;
  /** Maglev table size for `sch`/`tch`. Default 65537. */
  readonly maglevTableSize?: number;
}
