import { hashFourTuple, hashSource } from '../hash.js';
import { buildMaglevTable } from '../maglev.js';
import type { FlowKey } from '../types.js';
import type { Scheduler, SchedulerOptions } from './scheduler.js';

function createMaglevScheduler(
  kind: 'sch' | 'tch',
  hash: (flow: FlowKey) => number,
  options: SchedulerOptions,
): Scheduler {
  const table = buildMaglevTable(options.backends, { tableSize: options.maglevTableSize });
  // Table slots refer to backends in id order; translate once so pick() is a plain array read.
  const indexById = new Map(options.backends.map((b, i) => [b.id, i]));
  const toCaller = Int32Array.from(table.backendIds, (id) => indexById.get(id)!);
  const { slots, size } = table;
  return {
    kind,
    pick(flow) {
      const s = slots[hash(flow) % size]!;
      return s < 0 ? -1 : toCaller[s]!;
    },
  };
}

/** `sch`: source-IP consistent hash over a Maglev table; every node picks alike for a client address. */
export function createSourceHash(options: SchedulerOptions): Scheduler {
  return createMaglevScheduler('sch', hashSource, options);
}

/** `tch`: 4-tuple consistent hash over a Maglev table (the fallback when conntrack has no entry). */
export function createFourTupleHash(options: SchedulerOptions): Scheduler {
  return createMaglevScheduler('tch', hashFourTuple, options);
}
