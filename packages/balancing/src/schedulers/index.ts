import { createFourTupleHash, createSourceHash } from './consistent-hash.js';
import { createRoundRobin } from './round-robin.js';
import type { Scheduler, SchedulerKind, SchedulerOptions } from './scheduler.js';
import { createWeightedLeastConnections } from './weighted-least-connections.js';
import { createWeightedRoundRobin } from './weighted-round-robin.js';

export type { Scheduler, SchedulerKind, SchedulerOptions } from './scheduler.js';
export {
  createFourTupleHash,
  createRoundRobin,
  createSourceHash,
  createWeightedLeastConnections,
  createWeightedRoundRobin,
};

/** Builds the scheduler a listener names. */
export function createScheduler(kind: SchedulerKind, options: SchedulerOptions): Scheduler {
  switch (kind) {
    case 'rr':
      return createRoundRobin(options);
    case 'wrr':
      return createWeightedRoundRobin(options);
    case 'wlc':
      return createWeightedLeastConnections(options);
    case 'sch':
      return createSourceHash(options);
    case 'tch':
      return createFourTupleHash(options);
  }
}
