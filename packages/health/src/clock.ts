/**
 * The time source a probe uses: `now()` for latency, `setTimeout`/`clearTimeout` for its deadline.
 * Injected so tests can pin latencies and drive deadlines without sleeping.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale (only differences are used). */
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The process clock: `performance.now()` (monotonic, so NTP steps never yield negative latencies). */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
