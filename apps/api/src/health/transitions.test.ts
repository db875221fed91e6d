import { randomUUID } from 'node:crypto';
import { serverHealth } from '@slb/db';
import { HEALTH_TRANSITION_FIELD, type HealthTransitionMessage, healthTransitionsStream } from '@slb/model';
import { until } from '@slb/test-support/fleet';
import { createTestDb, type TestDb } from '@slb/test-support/test-db';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TransitionConsumer } from './transitions.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
let t: TestDb;
let redis: Redis;
let prefix: string;
let consumer: TransitionConsumer | undefined;

beforeEach(() => {
  t = createTestDb();
  redis = new Redis(REDIS_URL);
  prefix = `test-${randomUUID()}`;
});
afterEach(async () => {
  await consumer?.close();
  consumer = undefined;
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  t.close();
});

function add(message: unknown) {
  const body = typeof message === 'string' ? message : JSON.stringify(message);
  return redis.xadd(healthTransitionsStream(prefix), '*', HEALTH_TRANSITION_FIELD, body);
}

describe('TransitionConsumer', () => {
  it('stores transitions, skips unknown targets and drops malformed messages, acking all', async () => {
    const g = t.group();
    const s = t.server(g, '127.0.0.1', 80);
    const l = t.listener({ serverGroupId: g, port: 80 });
    const base = Date.now();
    const seen: HealthTransitionMessage[] = [];
    consumer = new TransitionConsumer({
      store: t.store,
      redisUrl: REDIS_URL,
      keyPrefix: prefix,
      consumer: 'c1',
      blockMs: 100,
      onTransition: (m) => {
        seen.push(m);
      },
    });
    await consumer.start();
    const at = (ms: number) => new Date(base + ms).toISOString();
    const abnormal = {
      listenerId: l,
      serverId: s,
      status: 'abnormal',
      since: at(0),
      lastError: 'ECONNREFUSED',
    };
    await add(abnormal);
    await add('{not json');
    await add({ ...abnormal, status: 'sideways' });
    await add({ ...abnormal, extra: 1 });
    await redis.xadd(healthTransitionsStream(prefix), '*', 'other', 'x');
    await add({ ...abnormal, listenerId: 'lsn-gone' });
    await add({ ...abnormal, status: 'normal', since: at(10_000), lastError: null });
    // An older report arriving late must not overwrite the newer row.
    await add({ ...abnormal, since: at(5_000) });
    const stats = consumer.stats;
    await until('all handled', () => stats.stored + stats.skipped + stats.stale + stats.invalid === 8, 5000);
    expect(stats).toEqual({ stored: 2, skipped: 1, stale: 1, invalid: 4, implausible: 0 });
    const rows = t.db.select().from(serverHealth).all();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      listenerId: l,
      serverId: s,
      status: 'normal',
      since: at(10_000),
      lastError: null,
    });
    expect(seen.map((m) => m.status)).toEqual(['abnormal', 'normal']);
    const pending = (await redis.xpending(healthTransitionsStream(prefix), 'api')) as [number, ...unknown[]];
    expect(pending[0]).toBe(0);
  });

  it('handles entries delivered before a restart but never acked', async () => {
    const g = t.group();
    const s = t.server(g, '127.0.0.1', 80);
    const l = t.listener({ serverGroupId: g, port: 80 });
    const stream = healthTransitionsStream(prefix);
    await redis.xgroup('CREATE', stream, 'api', '0', 'MKSTREAM');
    await add({ listenerId: l, serverId: s, status: 'normal', since: new Date().toISOString(), lastError: null });
    // A previous incarnation read it and died before storing it.
    await redis.xreadgroup('GROUP', 'api', 'c1', 'COUNT', 10, 'STREAMS', stream, '>');
    consumer = new TransitionConsumer({
      store: t.store,
      redisUrl: REDIS_URL,
      keyPrefix: prefix,
      consumer: 'c1',
      blockMs: 100,
    });
    await consumer.start();
    expect(consumer.stats.stored).toBe(1);
    expect(t.db.select().from(serverHealth).all()[0]?.status).toBe('normal');
  });
});

describe('TransitionConsumer names', () => {
  it('gives every process its own consumer name by default, and a clean stop leaves none behind', async () => {
    // Two API processes of one deployment (or of two, before namespaces) on one host: under one consumer
    // name each would take the other's deliveries for its own pending entries.
    const a = new TransitionConsumer({ store: t.store, redisUrl: REDIS_URL, keyPrefix: prefix, blockMs: 100 });
    const b = new TransitionConsumer({ store: t.store, redisUrl: REDIS_URL, keyPrefix: prefix, blockMs: 100 });
    await a.start();
    await b.start();
    const stream = healthTransitionsStream(prefix);
    const names = async () => ((await redis.xinfo('CONSUMERS', stream, 'api')) as unknown[][]).map((c) => String(c[1]));
    expect(new Set(await names()).size).toBe(2);
    await a.close();
    await b.close();
    expect(await names()).toEqual([]);
  });

  it('takes over what a crashed process left unacked while running, not only at start', async () => {
    const g = t.group();
    const s = t.server(g, '127.0.0.1', 80);
    const l = t.listener({ serverGroupId: g, port: 80 });
    const stream = healthTransitionsStream(prefix);
    await redis.xgroup('CREATE', stream, 'api', '0', 'MKSTREAM');
    await add({ listenerId: l, serverId: s, status: 'abnormal', since: new Date().toISOString(), lastError: 'x' });
    // Another process of the deployment read it and died just before this one started: at start the entry
    // is not idle long enough to claim, so only a claim while running stores it.
    await redis.xreadgroup('GROUP', 'api', 'crashed-process', 'COUNT', 10, 'STREAMS', stream, '>');
    consumer = new TransitionConsumer({
      store: t.store,
      redisUrl: REDIS_URL,
      keyPrefix: prefix,
      blockMs: 50,
      claimIdleMs: 300,
    });
    await consumer.start();
    expect(consumer.stats.stored).toBe(0);
    await until('the orphaned entry stored', () => consumer!.stats.stored === 1, 3000);
    expect(t.db.select().from(serverHealth).all()[0]?.status).toBe('abnormal');
  });

  it('removes consumers of processes long gone that hold nothing, keeps those with pending entries', async () => {
    const g = t.group();
    const s = t.server(g, '127.0.0.1', 80);
    const l = t.listener({ serverGroupId: g, port: 80 });
    const stream = healthTransitionsStream(prefix);
    await redis.xgroup('CREATE', stream, 'api', '0', 'MKSTREAM');
    await redis.xgroup('CREATECONSUMER', stream, 'api', 'gone-idle');
    await add({ listenerId: l, serverId: s, status: 'normal', since: new Date().toISOString(), lastError: null });
    await redis.xreadgroup('GROUP', 'api', 'gone-with-work', 'COUNT', 10, 'STREAMS', stream, '>');
    await new Promise((r) => setTimeout(r, 250)); // real idle time: Redis measures it, no fake clock reaches it
    // claimIdleMs above the wait, so the pending entry is still gone-with-work's when consumers are judged.
    consumer = new TransitionConsumer({
      store: t.store,
      redisUrl: REDIS_URL,
      keyPrefix: prefix,
      consumer: 'me',
      blockMs: 50,
      claimIdleMs: 60_000,
      forgetIdleMs: 200,
    });
    await consumer.start();
    const names = ((await redis.xinfo('CONSUMERS', stream, 'api')) as unknown[][]).map((c) => String(c[1])).sort();
    expect(names).toEqual(['gone-with-work', 'me']);
  });
});
