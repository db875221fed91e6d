import { randomUUID } from 'node:crypto';
import { serverHealth } from '@slb/db';
import { HEALTH_TRANSITION_FIELD, healthTransitionsStream } from '@slb/model';
import { until } from '@slb/test-support/fleet';
import { createTestDb, type TestDb } from '@slb/test-support/test-db';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerTransitionMetrics } from './transition-metrics.js';
import { TransitionConsumer } from './transitions.js';

// What a forged or broken entry on the transition stream can do to a tenant's server status.
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
let t: TestDb;
let redis: Redis;
let prefix: string;
let consumer: TransitionConsumer;
const warnings: Array<Record<string, unknown>> = [];

beforeEach(async () => {
  t = createTestDb();
  redis = new Redis(REDIS_URL);
  prefix = `test-${randomUUID()}`;
  warnings.length = 0;
  const logger = {
    warn: (obj: Record<string, unknown>) => warnings.push(obj),
    error: () => {},
    info: () => {},
  } as never;
  consumer = new TransitionConsumer({ store: t.store, redisUrl: REDIS_URL, keyPrefix: prefix, blockMs: 100, logger });
  await consumer.start();
});
afterEach(async () => {
  await consumer.close();
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  t.close();
});

const handled = () => {
  const s = consumer.stats;
  return s.stored + s.skipped + s.stale + s.invalid + s.implausible;
};
const add = (message: object) =>
  redis.xadd(healthTransitionsStream(prefix), '*', HEALTH_TRANSITION_FIELD, JSON.stringify(message));
const rows = () => t.db.select().from(serverHealth).all();

let nextPort = 80;
function target() {
  const g = t.group();
  const port = nextPort++;
  return { serverId: t.server(g, '127.0.0.1', port), listenerId: t.listener({ serverGroupId: g, port }) };
}

describe('transition stream: implausible times', () => {
  it('a forged entry dated 9999-12-31 does not pin the status; the next genuine one applies', async () => {
    const ids = target();
    await add({ ...ids, status: 'normal', since: '9999-12-31T00:00:00.000Z', lastError: null });
    const now = new Date().toISOString();
    await add({ ...ids, status: 'abnormal', since: now, lastError: 'ECONNREFUSED' });
    await until('both handled', () => handled() === 2);
    expect(consumer.stats).toMatchObject({ implausible: 1, stored: 1 });
    expect(rows()).toEqual([expect.objectContaining({ status: 'abnormal', since: now, lastError: 'failed' })]);
    expect(warnings).toContainEqual(
      expect.objectContaining({ since: '9999-12-31T00:00:00.000Z', reason: 'since is in the future' }),
    );
    const registry = new Registry();
    registerTransitionMetrics(registry, consumer.stats);
    const text = await registry.metrics();
    expect(text).toContain('slb_api_health_transitions_total{outcome="implausible"} 1');
    expect(text).toContain('slb_api_health_transitions_total{outcome="stored"} 1');
  });

  it('drops a since beyond the clock-skew allowance, or before the target existed', async () => {
    const ids = target();
    const inTwoMinutes = new Date(Date.now() + 120_000).toISOString();
    await add({ ...ids, status: 'normal', since: inTwoMinutes, lastError: null });
    await add({ ...ids, status: 'normal', since: '2001-01-01T00:00:00.000Z', lastError: null });
    await add({ ...ids, status: 'normal', since: '1970-01-01T00:00:00Z', lastError: null });
    // Within the allowance: a worker whose clock runs 10 s ahead is believed.
    const slightlyAhead = new Date(Date.now() + 10_000).toISOString();
    await add({ ...ids, status: 'normal', since: slightlyAhead, lastError: null });
    await until('all handled', () => handled() === 4);
    expect(consumer.stats).toMatchObject({ implausible: 3, stored: 1 });
    expect(rows()).toEqual([expect.objectContaining({ status: 'normal', since: slightlyAhead })]);
  });

  it('a row already pinned by a future since is replaced by the next genuine report', async () => {
    const ids = target();
    const stamp = new Date().toISOString();
    t.db
      .insert(serverHealth)
      .values({ ...ids, status: 'normal', since: '9999-12-31T00:00:00.000Z', lastError: null, updatedAt: stamp })
      .run();
    const now = new Date().toISOString();
    await add({ ...ids, status: 'abnormal', since: now, lastError: 'timeout after 5000ms' });
    await until('handled', () => handled() === 1);
    expect(consumer.stats.stored).toBe(1);
    expect(rows()).toEqual([expect.objectContaining({ status: 'abnormal', since: now, lastError: 'timeout' })]);
  });
});

describe('transition stream: tenant-visible reasons', () => {
  it('stores only the coarse reason of a probe error', async () => {
    const cases: Array<[string | null, string | null]> = [
      ['ECONNREFUSED', 'failed'],
      ['ECONNRESET', 'failed'],
      ['status 500 not in http_2xx,http_3xx', 'failed'],
      ['invalid status line', 'failed'],
      ['connection closed before response', 'failed'],
      ['EHOSTUNREACH', 'failed'],
      ['timeout after 2000ms', 'timeout'],
      [null, null],
    ];
    const base = Date.now();
    const targets = cases.map(() => target());
    for (const [i, [detail]] of cases.entries()) {
      await add({ ...targets[i]!, status: 'abnormal', since: new Date(base + i).toISOString(), lastError: detail });
    }
    await until('all handled', () => handled() === cases.length);
    expect(consumer.stats.stored).toBe(cases.length);
    const byServer = new Map(rows().map((r) => [r.serverId, r.lastError]));
    expect(targets.map((tg) => byServer.get(tg.serverId))).toEqual(cases.map(([, coarse]) => coarse));
  });
});
