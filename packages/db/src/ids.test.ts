import { describe, expect, it } from 'vitest';
import { firstIdAt, newId } from './ids.js';

describe('newId', () => {
  it('has the prefix and 20 base32 characters', () => {
    expect(newId('loadBalancer')).toMatch(/^lb-[0-9a-z]{20}$/);
    expect(newId('server')).toMatch(/^srv-[0-9a-z]{20}$/);
  });

  it('is strictly increasing, also within one millisecond and when the clock steps back', () => {
    const fixed = 1_800_000_000_000;
    const ids = [
      ...Array.from({ length: 1000 }, () => newId('listener', fixed)),
      ...Array.from({ length: 10 }, () => newId('listener', fixed - 5)),
      newId('listener', fixed + 1),
    ];
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('firstIdAt', () => {
  it('sorts after every id made before the time and not after any made from it on', () => {
    const t = 1_900_000_000_000;
    const before = newId('event', t - 1);
    const cutoff = firstIdAt('event', t);
    const after = newId('event', t);
    expect(cutoff).toMatch(/^evt-[0-9a-z]{20}$/);
    expect(before < cutoff).toBe(true);
    expect(cutoff <= after).toBe(true);
  });
});
