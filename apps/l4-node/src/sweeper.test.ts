import { afterEach, describe, expect, it, vi } from 'vitest';
import { Sweeper } from './sweeper.js';

describe('Sweeper', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs every task on one timer, and stops the timer with the last task', () => {
    vi.useFakeTimers();
    const s = new Sweeper(1000);
    const runs = new Array<number>(1000).fill(0);
    const stops = runs.map((_, i) =>
      s.add(() => {
        runs[i]!++;
      }),
    );
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(3000);
    expect(runs.every((n) => n === 3)).toBe(true);
    for (const stop of stops.slice(1)) stop();
    vi.advanceTimersByTime(1000);
    expect(runs[0]).toBe(4);
    expect(runs[1]).toBe(3);
    stops[0]!();
    expect(vi.getTimerCount()).toBe(0);
    expect(s.size).toBe(0);
  });

  it('runs every task when one throws, then throws its error', () => {
    vi.useFakeTimers();
    const s = new Sweeper(1000);
    let after = 0;
    s.add(() => {
      throw new Error('sweep broke');
    });
    s.add(() => {
      after++;
    });
    expect(() => vi.advanceTimersByTime(1000)).toThrow('sweep broke');
    expect(after).toBe(1);
  });
});
