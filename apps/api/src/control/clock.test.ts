import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';

// The test clock must behave as Node's timers do, or the hub's timing tests prove nothing.

describe('ManualClock', () => {
  it('runs timers at their due time as it advances, intervals once per period', () => {
    const clock = new ManualClock(0);
    const runs: string[] = [];
    clock.setInterval(() => runs.push(`tick@${clock.now()}`), 100);
    clock.setTimeout(() => runs.push(`once@${clock.now()}`), 150);
    clock.advance(99);
    expect(runs).toEqual([]);
    clock.advance(201);
    expect(runs).toEqual(['tick@100', 'once@150', 'tick@200', 'tick@300']);
    expect(clock.now()).toBe(300);
  });

  it('runs an interval overdue after a jump once, late, then a period after that', () => {
    const clock = new ManualClock(0);
    const runs: number[] = [];
    clock.setInterval(() => runs.push(clock.now()), 100);
    clock.jump(1_000);
    expect(runs).toEqual([]);
    clock.advance(150);
    expect(runs).toEqual([1_000, 1_100]);
  });

  it('runs deferred work on flush, and what it defers in turn; cancelled work never', () => {
    const clock = new ManualClock(0);
    const runs: string[] = [];
    clock.defer(() => {
      runs.push('a');
      clock.defer(() => runs.push('b'));
    });
    clock.defer(() => runs.push('cancelled')).cancel();
    clock.setTimeout(() => runs.push('cancelled timer'), 10).cancel();
    expect(runs).toEqual([]);
    clock.flush();
    clock.advance(20);
    expect(runs).toEqual(['a', 'b']);
  });
});
