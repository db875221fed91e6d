/**
 * At most `max` tasks running at once, the rest waiting in arrival order. A shard job starts its probes
 * on time, but a process must not open more sockets than it was sized for; a probe that waits here starts
 * late, and the lateness histogram shows it.
 */
export class Limiter {
  private running = 0;
  /**
   * Waiters from `head` on. A behind worker queues thousands of probes here, and Array#shift, which copies
   * the array, made the limiter the hottest function of a saturated worker (15 % of its CPU, profiled).
   */
  private waiting: Array<() => void> = [];
  private head = 0;

  constructor(private readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`limit must be a positive integer, got ${max}`);
  }

  /** Tasks running now. */
  get active(): number {
    return this.running;
  }

  /** Tasks waiting for a slot. */
  get queued(): number {
    return this.waiting.length - this.head;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await task();
    } finally {
      // The slot passes straight to the next waiter, so a newcomer cannot overtake it.
      const next = this.next();
      if (next) next();
      else this.running--;
    }
  }

  private next(): (() => void) | undefined {
    if (this.head === this.waiting.length) return undefined;
    const next = this.waiting[this.head++];
    if (this.head === this.waiting.length) {
      this.waiting = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.waiting.length) {
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
    return next;
  }
}
