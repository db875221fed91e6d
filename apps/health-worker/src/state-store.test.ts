import { randomUUID } from 'node:crypto';
import { healthTransitionsStream } from '@slb/model';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { TargetStateStore } from './state-store.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const thresholds = { healthyThreshold: 2, unhealthyThreshold: 3 };
let prefix: string;
let a: Redis;
let b: Redis;

beforeEach(() => {
  prefix = `test-${randomUUID()}`;
  a = new Redis(REDIS_URL);
  b = new Redis(REDIS_URL);
});
afterEach(async () => {
  const keys = await a.keys(`${prefix}:*`);
  if (keys.length > 0) await a.del(...keys);
  await a.quit();
  await b.quit();
});

it('loses no update when checks of one target race, within a worker and between workers', async () => {
  // Two workers (stores on their own connections), each with several checks of the same target in flight.
  // Below the threshold every success changes the stored run, so every one of them is a write.
  const slow = { healthyThreshold: 10, unhealthyThreshold: 3 };
  const stores = [new TargetStateStore(a, { prefix }), new TargetStateStore(b, { prefix })];
  const race = (count: number, from: number) =>
    Promise.all(
      Array.from({ length: count }, (_, i) => stores[i % 2]!.record('lsn-1', 'srv-1', { ok: true }, from + i, slow)),
    );
  const below = await race(9, 1000);
  expect((await stores[0]!.read('lsn-1', 'srv-1'))?.consecutiveSuccesses).toBe(9);
  expect(below.every((r) => r.transition === null && !r.unchanged)).toBe(true);
  const past = await race(40, 2000);
  const state = await stores[0]!.read('lsn-1', 'srv-1');
  expect(state?.status).toBe('normal');
  // Exactly one transition, and exactly one stream entry for it.
  expect(past.filter((r) => r.transition !== null)).toHaveLength(1);
  expect(await a.xlen(healthTransitionsStream(prefix))).toBe(1);
});

it('does not write a check that changes nothing, but refreshes the state before its TTL could run out', async () => {
  const store = new TargetStateStore(a, { prefix, refreshMs: 1000, stateTtlMs: 60_000 });
  const key = `${prefix}:state:l:s`;
  await store.record('l', 's', { ok: true }, 1000, thresholds);
  expect((await store.record('l', 's', { ok: true }, 1001, thresholds)).message?.status).toBe('normal');
  const flipped = await a.get(key);
  await a.pexpire(key, 30_000);
  // Normal and staying normal: the longer run decides nothing, so Redis is only read.
  for (const at of [1100, 1500, 2000]) {
    expect(await store.record('l', 's', { ok: true }, at, thresholds)).toMatchObject({
      unchanged: true,
      message: null,
    });
  }
  expect(await a.get(key)).toBe(flipped);
  expect(await a.pttl(key)).toBeLessThanOrEqual(30_000);
  expect((await store.read('l', 's'))?.consecutiveSuccesses).toBe(2);
  // A whole refreshMs after the stored check: written, and the TTL starts again.
  expect(await store.record('l', 's', { ok: true }, 2001, thresholds)).toMatchObject({ unchanged: false });
  expect((await store.read('l', 's'))?.lastCheckedAt).toBe(2001);
  expect(await a.pttl(key)).toBeGreaterThan(30_000);
  // Any change is written at once.
  const failed = await store.record('l', 's', { ok: false, error: 'ECONNREFUSED' }, 2100, thresholds);
  expect(failed).toMatchObject({ unchanged: false });
  expect(await store.read('l', 's')).toMatchObject({ status: 'normal', consecutiveFailures: 1, lastCheckedAt: 2100 });
  expect(() => new TargetStateStore(a, { prefix, refreshMs: 60_000, stateTtlMs: 60_000 })).toThrow(RangeError);
});

it('reports a never-healthy target once as abnormal after N failures, then only transitions', async () => {
  const store = new TargetStateStore(a, { prefix });
  const out = [];
  for (let i = 0; i < 5; i++)
    out.push(await store.record('l', 's', { ok: false, error: 'ECONNREFUSED' }, 1000 + i, thresholds));
  expect(out.map((r) => r.message?.status ?? null)).toEqual([null, null, 'abnormal', null, null]);
  expect(out[2]!.message).toEqual({
    listenerId: 'l',
    serverId: 's',
    status: 'abnormal',
    since: new Date(1000).toISOString(),
    lastError: 'ECONNREFUSED',
  });
  const up = [
    await store.record('l', 's', { ok: true }, 2000, thresholds),
    await store.record('l', 's', { ok: true }, 2001, thresholds),
  ];
  expect(up.map((r) => r.message?.status ?? null)).toEqual([null, 'normal']);
});

it('replaces a corrupt stored state instead of trusting it', async () => {
  const store = new TargetStateStore(a, { prefix });
  await a.set(`${prefix}:state:l:s`, '{"v":1,"state":{"status":"weird"}}');
  const r = await store.record('l', 's', { ok: true }, 1000, thresholds);
  expect(r.transition).toBeNull();
  expect((await store.read('l', 's'))?.consecutiveSuccesses).toBe(1);
});
