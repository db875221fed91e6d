import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { runShard } from './shard-run.js';

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(1_000_000);
});
afterEach(() => vi.useRealTimers());

const probes = [{ offsetMs: 700 }, { offsetMs: 0 }, { offsetMs: 250 }, { offsetMs: 250 }, { offsetMs: 1999 }];

it('starts each probe once, at its own due time and never before', async () => {
  const started: Array<[number, number]> = [];
  const run = runShard(
    probes,
    1_000_000,
    async (p, due) => {
      started.push([p.offsetMs, Date.now() - due]);
    },
    new AbortController().signal,
  );
  await vi.advanceTimersByTimeAsync(249);
  expect(started).toEqual([[0, 0]]);
  await vi.advanceTimersByTimeAsync(2000);
  expect(await run).toEqual({ started: 5, failed: 0 });
  expect(started).toEqual([
    [0, 0],
    [250, 0],
    [250, 0],
    [700, 0],
    [1999, 0],
  ]);
});

it('runs overdue probes at once, waits for the slow ones and keeps going past a failure', async () => {
  vi.setSystemTime(1_000_500);
  const order: number[] = [];
  let release: () => void = () => {};
  const slow = new Promise<void>((r) => {
    release = r;
  });
  const run = runShard(
    probes,
    1_000_000,
    async (p) => {
      order.push(p.offsetMs);
      if (p.offsetMs === 0) await slow;
      if (p.offsetMs === 250) throw new Error('redis down');
    },
    new AbortController().signal,
  );
  await vi.advanceTimersByTimeAsync(0);
  expect(order).toEqual([0, 250, 250]);
  await vi.advanceTimersByTimeAsync(3000);
  expect(order).toEqual([0, 250, 250, 700, 1999]);
  let settled = false;
  void run.then(() => {
    settled = true;
  });
  await vi.advanceTimersByTimeAsync(0);
  expect(settled).toBe(false);
  release();
  const result = await run;
  expect(result).toMatchObject({ started: 5, failed: 2 });
  expect(String(result.firstError)).toContain('redis down');
});

it('starts nothing more once aborted', async () => {
  const stop = new AbortController();
  const started: number[] = [];
  const run = runShard(probes, 1_000_000, async (p) => started.push(p.offsetMs), stop.signal);
  await vi.advanceTimersByTimeAsync(300);
  stop.abort();
  expect(await run).toEqual({ started: 3, failed: 0 });
  await vi.advanceTimersByTimeAsync(3000);
  expect(started).toEqual([0, 250, 250]);
});
