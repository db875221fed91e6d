import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { deleteRedisKeys } from '@slb/test-support/redis-keys';
import { Redis } from 'ioredis';
import { afterAll, afterEach, expect, it } from 'vitest';
import { fencedCommand, RedisLease, renewLease } from './redis-lease.js';
import { leaseValue } from './timing.js';

// Two contenders for one lease in this process, each on its own connection, as two API replicas would be.

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = `test-${randomUUID()}`;
const TTL = 1000; // renew every 333 ms, given up 100 ms before it ends
const clients: Redis[] = [];
const leases: RedisLease[] = [];

afterEach(async () => {
  for (const l of leases.splice(0)) await l.stop();
  for (const c of clients.splice(0)) c.disconnect();
});
afterAll(() => deleteRedisKeys(REDIS_URL, [`${PREFIX}:*`]));

function client(): Redis {
  const redis = new Redis(REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  clients.push(redis);
  return redis;
}

interface Contender {
  lease: RedisLease;
  redis: Redis;
  events: { at: number; what: 'gained' | 'lost'; token: number; reason?: string }[];
}

async function contender(key: string, holderId: string, takeOver = false): Promise<Contender> {
  const redis = client();
  await new Promise((resolve) => redis.once('ready', resolve));
  const lease = new RedisLease({ redis, key, holderId, ttlMs: TTL, takeOver });
  const events: Contender['events'] = [];
  lease.onGained((token) => events.push({ at: performance.now(), what: 'gained', token }));
  lease.onLost((token, reason) => events.push({ at: performance.now(), what: 'lost', token, reason }));
  leases.push(lease);
  return { lease, redis, events };
}

async function until(what: string, check: () => boolean, timeoutMs = 5000): Promise<number> {
  const start = performance.now();
  while (!check()) {
    if (performance.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return performance.now();
}

/** Both started; waits until one holds and returns [holder, other]. */
async function race(key: string): Promise<[Contender, Contender]> {
  const a = await contender(key, 'replica-a');
  const b = await contender(key, 'replica-b');
  a.lease.start();
  b.lease.start();
  await until('a holder', () => a.lease.held || b.lease.held);
  return a.lease.held ? [a, b] : [b, a];
}

it('lets exactly one of two contenders hold the lease, through many renewals', async () => {
  const key = `${PREFIX}:one-holder`;
  const [holder, other] = await race(key);
  for (let i = 0; i < 10; i++) {
    expect([holder.lease.held, other.lease.held]).toEqual([true, false]);
    await new Promise((r) => setTimeout(r, TTL / 4));
  }
  expect(holder.events.map((e) => e.what)).toEqual(['gained']);
  expect(other.events).toEqual([]);
  const token = holder.lease.token ?? 0;
  expect(await holder.redis.get(key)).toBe(leaseValue(holder.lease.holderId, token));
  expect(other.lease.token).toBeNull();
});

it('moves to the other contender within ttl + one renew period when the holder dies, with a higher token', async () => {
  const key = `${PREFIX}:takeover`;
  const [holder, other] = await race(key);
  const oldToken = holder.lease.token ?? 0;
  const oldValue = leaseValue(holder.lease.holderId, oldToken);
  // A killed process: no renewal, no release.
  const diedAt = performance.now();
  holder.lease.abandon();
  const gainedAt = await until('the takeover', () => other.lease.held);
  const takeoverMs = gainedAt - diedAt;
  console.log(`lease takeover after the holder died: ${Math.round(takeoverMs)} ms (ttl ${TTL} ms)`);
  expect(takeoverMs).toBeLessThanOrEqual(TTL + other.lease.timing.renewEveryMs + 100);
  expect(other.lease.token).toBeGreaterThan(oldToken);

  // The dead holder's renewal and its fenced write, were it to wake up, are refused by Redis.
  expect(await renewLease(holder.redis, key, oldValue, TTL)).toBe(false);
  const stale = await fencedCommand(holder.redis, key, oldValue, 'SET', [`${PREFIX}:takeover:data`], ['stale']);
  expect(stale).toEqual({ ok: false });
  expect(await holder.redis.get(`${PREFIX}:takeover:data`)).toBeNull();
  // The new holder's write goes through.
  expect(await other.lease.fenced('SET', [`${PREFIX}:takeover:data`], ['fresh'])).toEqual({ ok: true, result: 'OK' });
  expect(await holder.redis.get(`${PREFIX}:takeover:data`)).toBe('fresh');
});

it('gives the lease up when its Redis is unreachable, before the other contender can take it', async () => {
  const key = `${PREFIX}:partition`;
  const [holder, other] = await race(key);
  holder.redis.disconnect(); // renewals now fail at once (no offline queue)
  await until('the takeover', () => other.lease.held);
  const lost = holder.events.find((e) => e.what === 'lost');
  const gained = other.events.find((e) => e.what === 'gained');
  expect(lost?.reason).toBe('not renewed in time');
  expect(holder.lease.held).toBe(false);
  expect(lost?.at).toBeLessThan(gained?.at ?? 0);
  expect(await holder.lease.fenced('SET', [`${PREFIX}:partition:data`], ['stale'])).toEqual({ ok: false });
});

it('is not held after this process was blocked past the ttl, and the other contender takes over', async () => {
  const key = `${PREFIX}:blocked`;
  const [holder, other] = await race(key);
  // The event loop held up (a huge config serialised, a GC pause): no renewal goes out.
  const end = performance.now() + TTL + 50;
  while (performance.now() < end) {
    // busy
  }
  // Before any timer runs, the holder already knows it may not act as one.
  expect(holder.lease.held).toBe(false);
  expect(holder.lease.token).toBeNull();
  expect(await holder.lease.fenced('SET', [`${PREFIX}:blocked:data`], ['stale'])).toEqual({ ok: false });
  await until('the takeover', () => other.lease.held);
  await until('the loss reported', () => holder.events.some((e) => e.what === 'lost'));
  expect(other.lease.token).toBeGreaterThan(holder.events[0]?.token ?? Number.POSITIVE_INFINITY);
});

it('hands the lease over at the next try when the holder stops (releases)', async () => {
  const key = `${PREFIX}:release`;
  const [holder, other] = await race(key);
  const stoppedAt = performance.now();
  await holder.lease.stop();
  expect(holder.events.at(-1)).toMatchObject({ what: 'lost', reason: 'released' });
  expect(await holder.redis.exists(key)).toBe(0);
  const gainedAt = await until('the takeover', () => other.lease.held);
  expect(gainedAt - stoppedAt).toBeLessThanOrEqual(other.lease.timing.renewEveryMs + 100);
});

it('with takeOver (the only process its database admits), takes the lease from a killed predecessor at once', async () => {
  const key = `${PREFIX}:take-over`;
  const dead = await contender(key, 'predecessor');
  dead.lease.start();
  await until('the predecessor holds it', () => dead.lease.held);
  const oldToken = dead.lease.token ?? 0;
  const oldValue = leaseValue('predecessor', oldToken);
  dead.lease.abandon(); // killed: the lease stays in Redis for its ttl
  const successor = await contender(key, 'successor', true);
  const startedAt = performance.now();
  successor.lease.start();
  const gainedAt = await until('the successor holds it', () => successor.lease.held);
  expect(gainedAt - startedAt).toBeLessThan(TTL / 2); // not the ttl a plain contender waits out
  expect(successor.lease.token).toBeGreaterThan(oldToken);
  const stale = await fencedCommand(dead.redis, key, oldValue, 'SET', [`${PREFIX}:take-over:data`], ['stale']);
  expect(stale).toEqual({ ok: false });
  expect(await dead.redis.get(`${PREFIX}:take-over:data`)).toBeNull();
});
