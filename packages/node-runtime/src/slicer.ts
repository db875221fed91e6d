import { setImmediate as nextTurn } from 'node:timers/promises';

/** Longest stretch a long loop holds the event loop before it gives it a turn, ms. */
export const DEFAULT_SLICE_MS = 10;

/**
 * Runs a long loop in slices: a node applying a fleet's config (thousands of listeners) held its event loop
 * for seconds, so heartbeats went unsent (the controller marked it offline) and traffic on the listeners it
 * already served waited. Call `pause()` between items: once `sliceMs` have passed since the last turn, the
 * event loop gets one (timers, sockets), then the loop goes on.
 */
export class Slicer {
  private since = performance.now();
  /** Turns given so far. */
  turns = 0;

  /** @param sliceMs time between two turns, ms; default {@link DEFAULT_SLICE_MS}; 0 gives one per item. */
  constructor(private readonly sliceMs = DEFAULT_SLICE_MS) {}

  /** Resolves at once within the slice; else after the event loop had its turn. */
  async pause(): Promise<void> {
    if (performance.now() - this.since < this.sliceMs) return;
    await nextTurn();
    this.turns++;
    this.since = performance.now();
  }
}
