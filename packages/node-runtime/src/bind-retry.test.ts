import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BindRetries, bindFailureReason } from './bind-retry.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Lets the timer's async try run to its end. */
const settle = () => vi.advanceTimersByTimeAsync(0);

describe('BindRetries', () => {
  it('tries 250 ms after the failure, doubling to a 5 s ceiling (jitter at its midpoint)', async () => {
    const at: number[] = [];
    const start = Date.now();
    const retries = new BindRetries({ random: () => 0.5 });
    retries.schedule('l1', 'first', async () => {
      at.push(Date.now());
      return 'still';
    });
    await vi.advanceTimersByTimeAsync(30_000);
    const gaps = at.map((t, i) => t - (i === 0 ? start : at[i - 1]!));
    expect(gaps.slice(0, 7)).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000]);
    expect(retries.tries('l1')).toBe(at.length);
    retries.cancelAll();
  });

  it('jitters each wait within ±50%, never past the ceiling', async () => {
    const at: number[] = [];
    const start = Date.now();
    let r = 0;
    const retries = new BindRetries({ random: () => [0, 0.999][r++ % 2]! });
    retries.schedule('l1', 'first', async () => {
      at.push(Date.now());
      return 'still';
    });
    await vi.advanceTimersByTimeAsync(20_000);
    const gaps = at.map((t, i) => t - (i === 0 ? start : at[i - 1]!));
    expect(gaps[0]).toBe(125); // 250 × 0.5
    expect(gaps[1]).toBe(750); // 500 × 1.499, rounded
    for (const g of gaps) expect(g).toBeLessThanOrEqual(5000);
    retries.cancelAll();
  });

  it('stops once a try binds, and after cancel', async () => {
    let tries = 0;
    const retries = new BindRetries({ baseMs: 10, capMs: 10, random: () => 0.5 });
    retries.schedule('bound', 'x', async () => (++tries >= 3 ? null : 'still'));
    await vi.advanceTimersByTimeAsync(1000);
    expect(tries).toBe(3);
    expect(retries.has('bound')).toBe(false);

    let cancelled = 0;
    retries.schedule('gone', 'x', async () => {
      cancelled++;
      return 'still';
    });
    await vi.advanceTimersByTimeAsync(25);
    retries.cancel('gone');
    const seen = cancelled;
    await vi.advanceTimersByTimeAsync(1000);
    expect(cancelled).toBe(seen);
    expect(retries.size).toBe(0);
  });

  it('ignores the result of a try that was cancelled while it ran', async () => {
    let finish: (v: string | null) => void = () => {};
    const retries = new BindRetries({ baseMs: 10, capMs: 10, random: () => 0.5 });
    let tries = 0;
    retries.schedule('l1', 'x', () => {
      tries++;
      return new Promise((r) => {
        finish = r;
      });
    });
    await vi.advanceTimersByTimeAsync(10);
    retries.cancel('l1');
    finish('still');
    await settle();
    await vi.advanceTimersByTimeAsync(1000);
    expect(tries).toBe(1);
    expect(retries.has('l1')).toBe(false);
  });
});

describe('bindFailureReason', () => {
  it('names transport, the failing address:port and the code', () => {
    const err = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE', address: '127.1.0.5', port: 7001 });
    expect(bindFailureReason('tcp', err, '127.1.0.9', 7001)).toBe('cannot bind tcp 127.1.0.5:7001: EADDRINUSE');
    expect(bindFailureReason('udp', Object.assign(new Error('x'), { code: 'EACCES' }), '::1', 53)).toBe(
      'cannot bind udp [::1]:53: EACCES',
    );
    expect(bindFailureReason('tcp', new Error('odd'), '127.0.0.1', 1)).toBe('cannot bind tcp 127.0.0.1:1: odd');
  });
});
