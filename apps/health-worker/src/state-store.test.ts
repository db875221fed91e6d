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
  // Two workers (stores on their own connections), each with 30 checks of the same target in flight.
  const stores = [new TargetStateStore(a, { prefix }), new TargetStateStore(b, { prefix })];
  const writes = Array.from({ length: 60 }, (_, i) =>
    stores[i % 2]!.record('lsn-1', 'srv-1', { ok: true }, 1000 + i, thresholds),
  );
  const results = await Promise.all(writes);
  const state = await stores[0]!.read('lsn-1', 'srv-1');
  expect(state?.consecutiveSuccesses).toBe(60);
  expect(state?.status).toBe('normal');
  // Exactly one transition, and exactly one stream entry for it.
  expect(results.filter((r) => r.transition !== null)).toHaveLength(1);
  expect(await a.xlen(healthTransitionsStream(prefix))).toBe(1);
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
