/** A scheduled callback, cancelled at most once; timers never keep the process alive (they are unref'd). */
export interface Timer {
  cancel(): void;
}

/**
 * The hub's time: what it reads as now, and how it waits. Injected so tests move time by hand (ManualClock)
 * instead of sleeping; the real one by default.
 */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): Timer;
  setInterval(fn: () => void, ms: number): Timer;
  /** Runs `fn` once the current burst of work is done (a turn of the event loop on the real clock). */
  defer(fn: () => void): Timer;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
  setInterval(fn, ms) {
    const t = setInterval(fn, ms);
    t.unref();
    return { cancel: () => clearInterval(t) };
  },
  defer(fn) {
    const t = setImmediate(fn);
    return { cancel: () => clearImmediate(t) };
  },
};

interface Scheduled {
  due: number;
  fn: () => void;
  /** Set for an interval: it is due again this long after it ran. */
  every: number | null;
  cancelled: boolean;
}

/**
 * A clock that moves only when told (tests). Like Node's timers, a timer overdue because time jumped
 * (`jump`: the process was held up) runs once, late, not once per period missed.
 */
export class ManualClock implements Clock {
  private current: number;
  private readonly timers: Scheduled[] = [];
  private deferred: Scheduled[] = [];

  constructor(start = Date.parse('2026-01-01T00:00:00.000Z')) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    return this.schedule({ due: this.current + Math.max(0, ms), fn, every: null, cancelled: false });
  }

  setInterval(fn: () => void, ms: number): Timer {
    const every = Math.max(1, ms);
    return this.schedule({ due: this.current + every, fn, every, cancelled: false });
  }

  defer(fn: () => void): Timer {
    const d: Scheduled = { due: this.current, fn, every: null, cancelled: false };
    this.deferred.push(d);
    return {
      cancel: () => {
        d.cancelled = true;
      },
    };
  }

  /** Runs the deferred work (and what it defers in turn), as the event loop would before any timer. */
  flush(): void {
    for (let rounds = 0; this.deferred.length > 0; rounds++) {
      if (rounds > 1000) throw new Error('deferred work keeps deferring more');
      const batch = this.deferred;
      this.deferred = [];
      for (const d of batch) if (!d.cancelled) d.fn();
    }
  }

  /** Moves time forward by `ms`, running every timer due on the way at its due time (and deferred work). */
  advance(ms: number): void {
    const until = this.current + ms;
    this.flush();
    for (;;) {
      const next = this.nextDue(until);
      if (next === undefined) break;
      this.current = Math.max(this.current, next.due);
      this.run(next);
      this.flush();
    }
    this.current = until;
  }

  /** Moves time forward without running anything: the process was busy (its event loop held) that long. */
  jump(ms: number): void {
    this.current += ms;
  }

  private schedule(s: Scheduled): Timer {
    this.timers.push(s);
    return {
      cancel: () => {
        s.cancelled = true;
        const i = this.timers.indexOf(s);
        if (i >= 0) this.timers.splice(i, 1);
      },
    };
  }

  private nextDue(until: number): Scheduled | undefined {
    let next: Scheduled | undefined;
    for (const t of this.timers)
      if (!t.cancelled && t.due <= until && (next === undefined || t.due < next.due)) next = t;
    return next;
  }

  private run(t: Scheduled): void {
    if (t.every === null) {
      t.cancelled = true;
      this.timers.splice(this.timers.indexOf(t), 1);
    }
    // Like Node's setInterval: the next run is a period after this one ran, late or not.
    else t.due = this.current + t.every;
    t.fn();
  }
}
