/**
 * One interval for every listener's periodic sweep (expired flows, persistence, peers' entries, gauges). A
 * node with 10,000 listeners ran 10,000 one-second intervals, each a timer object and a wake-up of its own.
 */
export class Sweeper {
  private readonly tasks = new Set<() => void>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly everyMs: number) {}

  /** Runs `task` every `everyMs` from now on; returns what stops it. */
  add(task: () => void): () => void {
    this.tasks.add(task);
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.run(), this.everyMs);
      this.timer.unref();
    }
    return () => {
      this.tasks.delete(task);
      if (this.tasks.size > 0 || this.timer === undefined) return;
      clearInterval(this.timer);
      this.timer = undefined;
    };
  }

  /** Tasks running (for tests). */
  get size(): number {
    return this.tasks.size;
  }

  /** Every task runs even if one throws; the first error is thrown after, as its own interval's would be. */
  private run(): void {
    let failed: { err: unknown } | undefined;
    for (const task of this.tasks) {
      try {
        task();
      } catch (err) {
        failed ??= { err };
      }
    }
    if (failed !== undefined) throw failed.err;
  }
}

/** The node's sweeper: its listeners sweep once a second, together. */
export const listenerSweeper = new Sweeper(1000);
