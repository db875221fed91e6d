import { constants, PerformanceObserver } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryRelease, RELEASE_AFTER_CHARS } from './memory-release.js';

// A fleet-sized config leaves its garbage to a full collection V8 may not run for minutes; the node asks for one.

const majorCollections: number[] = [];
const observer = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    if ((e.detail as { kind?: number } | undefined)?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)
      majorCollections.push(e.startTime);
  }
});
observer.observe({ entryTypes: ['gc'] });
afterEach(() => {
  majorCollections.length = 0;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('MemoryRelease', () => {
  it('runs one full collection after a large config, however many arrive together, none after a small one', async () => {
    const times: number[] = [];
    const release = new MemoryRelease((ms) => times.push(ms), 20);
    release.afterConfig(RELEASE_AFTER_CHARS - 1);
    await sleep(60);
    expect(release.runs).toBe(0);
    release.afterConfig(RELEASE_AFTER_CHARS);
    release.afterConfig(RELEASE_AFTER_CHARS * 4);
    const asked = performance.now();
    await sleep(100);
    expect(release.runs).toBe(1);
    expect(times).toHaveLength(1);
    expect(majorCollections.some((at) => at >= asked)).toBe(true);
    release.stop();
  });

  it('gives back the heap that garbage held', async () => {
    const release = new MemoryRelease(() => {}, 10);
    let garbage: unknown[] | null = Array.from({ length: 500_000 }, (_, i) => ({ id: `srv-${i}`, port: i }));
    const held = process.memoryUsage().heapUsed;
    garbage = null;
    release.afterConfig(RELEASE_AFTER_CHARS);
    await sleep(80);
    expect(garbage).toBeNull();
    expect(release.runs).toBe(1);
    expect(process.memoryUsage().heapUsed).toBeLessThan(held - 20 * 2 ** 20);
  });

  it('stop() cancels a collection not yet run', async () => {
    const release = new MemoryRelease(() => {}, 20);
    release.afterConfig(RELEASE_AFTER_CHARS);
    release.stop();
    await sleep(60);
    expect(release.runs).toBe(0);
  });
});
