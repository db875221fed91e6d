import { describe, expect, it } from 'vitest';
import { UpgradeGuard } from './upgrade-guard.js';

function guard() {
  const warned: object[] = [];
  const log = { warn: (o: object) => warned.push(o) } as never;
  let now = 0;
  const g = new UpgradeGuard(log, {
    attemptsPerSecond: 1,
    attemptBurst: 5,
    failuresPerMinute: 6,
    failureBurst: 2,
    maxAddresses: 2,
    logWindowMs: 10_000,
    now: () => now,
  });
  return { g, warned, advance: (ms: number) => (now += ms) };
}

describe('UpgradeGuard', () => {
  it('spends failures, refills them with time, and logs one line per window', () => {
    const { g, warned, advance } = guard();
    for (let i = 0; i < 2; i++) {
      expect(g.admit('a')).toBe('ok');
      g.failed('a', 'bad');
    }
    expect(g.admit('a')).toBe('too_many_failures');
    expect(g.admit('b')).toBe('ok');
    expect(warned).toHaveLength(1);
    advance(10_000); // one failure back (6 a minute), and the log window is over
    expect(g.admit('a')).toBe('ok');
    g.failed('a', 'bad');
    expect(warned).toHaveLength(2);
    expect(warned[1]).toMatchObject({ remote: 'a', refused: 3 });
  });

  it('limits attempts however they end, and forgets the oldest address beyond its size', () => {
    const { g, advance } = guard();
    for (let i = 0; i < 5; i++) expect(g.admit('a')).toBe('ok');
    expect(g.admit('a')).toBe('too_many_attempts');
    advance(1000);
    expect(g.admit('a')).toBe('ok');
    g.admit('b');
    g.admit('c'); // 'a' is forgotten: a fresh burst
    for (let i = 0; i < 5; i++) expect(g.admit('a')).toBe('ok');
  });
});
