import { type ListenerTrafficReport, RESPONSE_CLASSES, UPSTREAM_TIME_BOUNDS_MS } from '@slb/model';

// Test data only (left out of the build, tsconfig.json): traffic a long-lived node reports.

/** A counter in the trillions, as a long-lived node's byte counts are: the longest a number gets in JSON. */
export const HUGE_COUNTER = 9_000_000_000_000;

/** One listener's traffic entry with every counter huge: the largest entry a heartbeat carries. */
export function hugeTrafficEntry(id: string): ListenerTrafficReport {
  return {
    id,
    conns: HUGE_COUNTER,
    bytesIn: HUGE_COUNTER,
    bytesOut: HUGE_COUNTER,
    drops: HUGE_COUNTER,
    active: HUGE_COUNTER,
    responses: RESPONSE_CLASSES.map(() => HUGE_COUNTER),
    upstreamMs: [...UPSTREAM_TIME_BOUNDS_MS, 0].map(() => HUGE_COUNTER),
  };
}
