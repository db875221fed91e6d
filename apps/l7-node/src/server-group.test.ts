import type { L7Backend } from '@slb/model';
import { describe, expect, it } from 'vitest';
import { BackendStates } from './backend-states.js';
import { ServerGroupRuntime } from './server-group.js';

const backend = (n: number): L7Backend => ({
  serverId: `srv-${String(n).padStart(20, '0')}`,
  address: '10.0.0.1',
  port: 8000 + n,
  weight: 100,
  healthy: true,
});

describe('passive health', () => {
  it('ejects after consecutive failures for a growing interval, capped at half the group', () => {
    let now = 1000;
    const states = new BackendStates();
    const health = { consecutiveFailures: 2, baseEjectionMs: 1000, maxEjectionMs: 10_000, maxEjectionPercent: 50 };
    const g = new ServerGroupRuntime(
      'sg-1',
      [backend(1), backend(2), backend(3), backend(4)],
      'rr',
      states,
      health,
      () => now,
    );
    const [a, b, c] = g.backends;
    expect(g.connectFailed(a!)).toBe(false);
    expect(g.connectFailed(a!)).toBe(true);
    expect(g.takesRequests(a!.serverId)).toBeUndefined();
    g.connectFailed(b!);
    expect(g.connectFailed(b!)).toBe(true);
    g.connectFailed(c!);
    expect(g.connectFailed(c!)).toBe(false); // 2 of 4 already out
    const picked = new Set(Array.from({ length: 8 }, () => g.pick()?.serverId));
    expect(picked.has(a!.serverId) || picked.has(b!.serverId)).toBe(false);
    now += 1000;
    expect(g.takesRequests(a!.serverId)).toBeDefined();
    g.connectFailed(a!);
    g.connectFailed(a!);
    expect(a!.state.ejectedUntil - now).toBe(2000); // second ejection doubles
  });

  it('skips excluded backends and unhealthy or weight-0 ones', () => {
    const g = new ServerGroupRuntime(
      'sg-2',
      [backend(1), { ...backend(2), healthy: false }, { ...backend(3), weight: 0 }, backend(4)],
      'wrr',
      new BackendStates(),
      { consecutiveFailures: 3, baseEjectionMs: 1, maxEjectionMs: 1, maxEjectionPercent: 50 },
    );
    const first = g.pick()!;
    expect([1, 4].map((n) => backend(n).serverId)).toContain(first.serverId);
    const second = g.pick(new Set([first]))!;
    expect(second.serverId).not.toBe(first.serverId);
    expect(g.pick(new Set([first, second]))).toBeNull();
  });
});

describe('fail open', () => {
  const health = { consecutiveFailures: 1, baseEjectionMs: 1000, maxEjectionMs: 1000, maxEjectionPercent: 50 };

  it('takes every positive-weight backend when none is healthy, and stops once one is', () => {
    const sick = [
      { ...backend(1), healthy: false },
      { ...backend(2), healthy: false },
      { ...backend(3), healthy: false, weight: 0 },
    ];
    const g = new ServerGroupRuntime('sg-3', sick, 'rr', new BackendStates(), health);
    expect(g.failOpen).toBe(true);
    const picked = new Set(Array.from({ length: 6 }, () => g.pick()?.serverId));
    expect([...picked].sort()).toEqual([backend(1).serverId, backend(2).serverId]);
    expect(g.takesRequests(backend(1).serverId)).toBeDefined(); // sticky sessions keep working too

    const oneBack = new ServerGroupRuntime(
      'sg-3',
      [{ ...sick[0]!, healthy: true }, sick[1]!],
      'rr',
      new BackendStates(),
      health,
    );
    expect(oneBack.failOpen).toBe(false);
    expect(new Set(Array.from({ length: 4 }, () => oneBack.pick()?.serverId))).toEqual(new Set([backend(1).serverId]));
  });

  it('still skips passively ejected backends, and has nothing to offer when every weight is 0', () => {
    const now = 1000;
    const g = new ServerGroupRuntime(
      'sg-4',
      [
        { ...backend(1), healthy: false },
        { ...backend(2), healthy: false },
      ],
      'rr',
      new BackendStates(),
      health,
      () => now,
    );
    const [a, b] = g.backends;
    expect(g.connectFailed(a!)).toBe(true);
    expect(new Set(Array.from({ length: 4 }, () => g.pick()?.serverId))).toEqual(new Set([b!.serverId]));

    const drained = new ServerGroupRuntime('sg-5', [{ ...backend(1), weight: 0 }], 'rr', new BackendStates(), health);
    expect(drained.failOpen).toBe(false);
    expect(drained.pick()).toBeNull();
  });
});
