import { expect, it } from 'vitest';
import { Limiter } from './limiter.js';

it('runs at most `max` tasks at once, the others in arrival order', async () => {
  const limiter = new Limiter(2);
  const releases: Array<() => void> = [];
  const started: number[] = [];
  let peak = 0;
  const tasks = [0, 1, 2, 3, 4].map((i) =>
    limiter.run(async () => {
      started.push(i);
      peak = Math.max(peak, limiter.active);
      await new Promise<void>((r) => releases.push(r));
      return i;
    }),
  );
  await new Promise((r) => setImmediate(r));
  expect(started).toEqual([0, 1]);
  releases[1]!();
  await new Promise((r) => setImmediate(r));
  expect(started).toEqual([0, 1, 2]);
  for (let i = 0; i < 5; i++) {
    releases[i]?.();
    await new Promise((r) => setImmediate(r));
  }
  for (const r of releases) r();
  expect(await Promise.all(tasks)).toEqual([0, 1, 2, 3, 4]);
  expect(started).toEqual([0, 1, 2, 3, 4]);
  expect(peak).toBe(2);
  expect(limiter.active).toBe(0);
});

it('frees the slot of a task that throws', async () => {
  const limiter = new Limiter(1);
  await expect(limiter.run(() => Promise.reject(new Error('x')))).rejects.toThrow('x');
  expect(await limiter.run(async () => 'next')).toBe('next');
  expect(limiter.active).toBe(0);
  expect(() => new Limiter(0)).toThrow(RangeError);
});

it('keeps arrival order through a long queue', async () => {
  const limiter = new Limiter(1);
  let release: () => void = () => {};
  const gate = limiter.run(() => new Promise<void>((r) => (release = r)));
  const order: number[] = [];
  const queued = Array.from({ length: 5000 }, (_, i) => limiter.run(async () => order.push(i)));
  expect(limiter.queued).toBe(5000);
  release();
  await Promise.all([gate, ...queued]);
  expect(order).toEqual(Array.from({ length: 5000 }, (_, i) => i));
  expect(limiter.queued).toBe(0);
  expect(limiter.active).toBe(0);
});
