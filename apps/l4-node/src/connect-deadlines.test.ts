import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConnectDeadlines, type PendingConnect } from './connect-deadlines.js';

/** A pending connect that records when it timed out, and can add itself again (a retry). */
class Connect implements PendingConnect {
  connectDeadline = 0;
  prevPending: PendingConnect | undefined;
  nextPending: PendingConnect | undefined;
  timedOutAt: number[] = [];
  retry: (() => void) | undefined;

  constructor(
    readonly name: string,
    private readonly order: string[],
  ) {}

  connectTimedOut(): void {
    this.timedOutAt.push(Date.now());
    this.order.push(this.name);
    this.retry?.();
  }
}

describe('ConnectDeadlines', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('times each connect out once, at its deadline, in deadline order; a removed one never', () => {
    const order: string[] = [];
    const list = new ConnectDeadlines(() => Date.now());
    const [a, b, c] = ['a', 'b', 'c'].map((n) => new Connect(n, order)) as [Connect, Connect, Connect];
    const t0 = Date.now();
    list.add(a, t0 + 100);
    vi.advanceTimersByTime(10);
    list.add(b, t0 + 110);
    list.add(c, t0 + 120);
    list.remove(b); // connected
    expect(list.size).toBe(2);
    vi.advanceTimersByTime(89);
    expect(order).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(order).toEqual(['a']);
    expect(a.timedOutAt).toEqual([t0 + 100]);
    vi.advanceTimersByTime(20);
    expect(order).toEqual(['a', 'c']);
    expect(c.timedOutAt).toEqual([t0 + 120]);
    vi.advanceTimersByTime(1_000);
    expect(order).toEqual(['a', 'c']);
    expect(list.size).toBe(0);
  });

  it('keeps one timer for a stream of connects: it is not re-armed per connect or cleared when they complete', () => {
    const order: string[] = [];
    const list = new ConnectDeadlines(() => Date.now());
    const armed = vi.spyOn(globalThis, 'setTimeout');
    const cleared = vi.spyOn(globalThis, 'clearTimeout');
    for (let i = 0; i < 1_000; i++) {
      const c = new Connect(String(i), order);
      list.add(c, Date.now() + 2_000);
      if (i % 10 !== 0) list.remove(c); // most connects complete within the millisecond
      vi.advanceTimersByTime(1);
    }
    // Armed for the first deadline only; the 100 left pending time out in order as the timer re-arms.
    expect(armed.mock.calls.length).toBe(1);
    expect(cleared.mock.calls.length).toBe(1); // the arm's clear of no timer
    vi.advanceTimersByTime(2_000);
    expect(order).toEqual(Array.from({ length: 100 }, (_, k) => String(k * 10)));
    expect(list.size).toBe(0);
  });

  it('puts an earlier deadline (a lowered timeout) ahead of later ones and fires for it', () => {
    const order: string[] = [];
    const list = new ConnectDeadlines(() => Date.now());
    const t0 = Date.now();
    const slow = new Connect('slow', order);
    const slower = new Connect('slower', order);
    const fast = new Connect('fast', order);
    list.add(slow, t0 + 2_000);
    list.add(slower, t0 + 2_100);
    list.add(fast, t0 + 50);
    vi.advanceTimersByTime(50);
    expect(order).toEqual(['fast']);
    vi.advanceTimersByTime(2_050);
    expect(order).toEqual(['fast', 'slow', 'slower']);
  });

  it('times out a connect again that re-added itself on timing out (a retry on another backend)', () => {
    const order: string[] = [];
    const list = new ConnectDeadlines(() => Date.now());
    const t0 = Date.now();
    const c = new Connect('c', order);
    let retries = 2;
    c.retry = () => {
      if (retries-- > 0) list.add(c, Date.now() + 100);
    };
    list.add(c, t0 + 100);
    vi.advanceTimersByTime(1_000);
    expect(c.timedOutAt).toEqual([t0 + 100, t0 + 200, t0 + 300]);
    expect(list.size).toBe(0);
  });

  it('removing a connect that is not in the list changes nothing', () => {
    const order: string[] = [];
    const list = new ConnectDeadlines(() => Date.now());
    const a = new Connect('a', order);
    const b = new Connect('b', order);
    list.add(a, Date.now() + 10);
    list.remove(b);
    list.remove(b);
    expect(list.size).toBe(1);
    list.remove(a);
    list.remove(a);
    expect(list.size).toBe(0);
    vi.advanceTimersByTime(100);
    expect(order).toEqual([]);
  });
});
