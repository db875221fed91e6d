import { describe, expect, it } from 'vitest';
import { RateLimiter } from './rate-limiter.js';

describe('RateLimiter', () => {
  it('allows a burst, then the sustained rate, and says how long to wait', () => {
    let now = 0;
    const limiter = new RateLimiter(10, 5, () => now);
    for (let i = 0; i < 5; i++) expect(limiter.take('a')).toBe(0);
    expect(limiter.take('a')).toBe(1);
    now += 100; // one token back at 10/s
    expect(limiter.take('a')).toBe(0);
    expect(limiter.take('a')).toBeGreaterThan(0);
    expect(limiter.take('b')).toBe(0); // callers do not share buckets
  });
});
