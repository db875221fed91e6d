import { randomUUID } from 'node:crypto';
import { FormatRegistry } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { HOUR_STRING_BYTES, HTTP_PLANE_AT, hourOf, TrafficMetrics } from '@slb/model';
import { deleteRedisKeys } from '@slb/test-support/redis-keys';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectFake, type FakeNode, heldListeners, settle } from './fake-node.js';
import { call, makeApp, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

// The hub turns the nodes' cumulative heartbeat counters into 10 s buckets in Redis, and GET …/metrics
// reads them back. Real Redis, a key prefix of this file's own, and a clock the test moves.

FormatRegistry.Set('date-time', (v) => !Number.isNaN(Date.parse(v)));

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const id = `test-${randomUUID()}`;
// A bucket boundary, so each step of the test lands in the bucket it means to.
let now = Math.floor(Date.now() / 10_000) * 10_000 - 120_000;
let t: TestApp;
let token: string;
let lbId: string;
let tcpId: string;
let httpId: string;

const beat = (node: FakeNode, bootId: string, listeners: object[]) =>
  node.say({
    type: 'heartbeat',
    load: { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 },
    traffic: { bootId, listeners },
  });
const tcp = (conns: number, active = 0) => ({
  id: tcpId,
  conns,
  bytesIn: conns * 10,
  bytesOut: conns * 100,
  drops: 0,
  active,
});

/** The metrics of the last two minutes of the test clock. */
async function metrics(path = `/v1/load-balancers/${lbId}/metrics`, query = '') {
  const from = new Date(now - 120_000).toISOString();
  const to = new Date(now + 10_000).toISOString();
  const res = await call(t.app, token, 'GET', `${path}?from=${from}&to=${to}&step=10${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}
const total = (series: (number | null)[], step = 10) => series.reduce<number>((a, v) => a + (v ?? 0) * step, 0);
/** The value of the point holding the test clock's current bucket. */
const at = (body: any, series: (number | null)[]) => series[body.timestamps.indexOf(Math.floor(now / 10_000) * 10)];

/** Lets the ingest's pipeline reach Redis. */
const flushed = () => new Promise((r) => setTimeout(r, 50));

beforeAll(async () => {
  t = await makeApp(undefined, {
    nodeToken: 'node-token-0123456789abcdef',
    redisUrl: REDIS_URL,
    metricsKeyPrefix: `${id}:metrics`,
    namespaceOverrides: { healthQueue: id, healthKeyPrefix: `${id}:health`, sessionSyncPrefix: `${id}:sync` },
    metricsClock: () => now,
  });
  ({ token } = await newTenant(t.app));
  ({ lbId } = await newLoadBalancer(t.app, token));
  await call(t.app, token, 'PATCH', `/v1/load-balancers/${lbId}`, { placement: { mode: 'all' } });
  const sg = (await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}/server-groups`)).body.items[0].id;
  tcpId = (
    await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
      protocol: 'tcp',
      port: 7001,
      serverGroupId: sg,
    })
  ).body.id;
  httpId = (
    await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
      protocol: 'http',
      port: 7080,
      serverGroupId: sg,
    })
  ).body.id;
  // Redis connected (the app connects at ready).
  for (let i = 0; i < 100 && (await call(t.app, null, 'GET', '/readyz')).status !== 200; i++) await flushed();
});

afterAll(async () => {
  await t?.close();
  await deleteRedisKeys(REDIS_URL, [`${id}:*`, `bull:${id}:*`]);
});

describe('ingest', () => {
  let a: FakeNode;
  let b: FakeNode;
  let l7: FakeNode;

  it('takes a node’s first beat as a baseline, then adds its deltas', async () => {
    a = await connectFake(t, { nodeId: 'l4-a', kind: 'l4', address: '127.0.0.11', reusePort: true });
    b = await connectFake(t, { nodeId: 'l4-b', kind: 'l4', address: '127.0.0.12', reusePort: true });
    await settle();
    expect(heldListeners(a).has(tcpId)).toBe(true);
    expect(heldListeners(b).has(tcpId)).toBe(true);
    beat(a, 'a1', [tcp(1_000_000, 3)]);
    await flushed();
    now += 1000;
    beat(a, 'a1', [tcp(1_000_010, 3)]);
    await flushed();
    const m = await metrics();
    expect([...Value.Errors(TrafficMetrics, m)].map((e) => `${e.path} ${e.message}`)).toEqual([]);
    expect(total(m.newConnectionsPerSecond)).toBe(10);
    expect(total(m.bytesInPerSecond)).toBe(100);
    expect(total(m.bytesOutPerSecond)).toBe(1000);
  });

  it('restarts from the new value under a new boot id', async () => {
    now += 1000;
    beat(a, 'a2', [tcp(4, 2)]);
    await flushed();
    expect(total((await metrics()).newConnectionsPerSecond)).toBe(14);
  });

  it('sums two nodes, and a node that went away adds nothing to later buckets', async () => {
    now += 10_000;
    beat(b, 'b1', [tcp(50, 1)]); // b's baseline: no gauge from b for the rest of this bucket
    now += 10_000;
    beat(a, 'a2', [tcp(5, 2)]);
    beat(b, 'b1', [tcp(52, 5)]);
    await flushed();
    let m = await metrics();
    expect(total(m.newConnectionsPerSecond)).toBe(14 + 1 + 2);
    expect(at(m, m.activeConnections)).toBe(7);
    // Later in the same bucket a's gauge moves: the bucket holds each node's last value.
    now += 1000;
    beat(a, 'a2', [tcp(5, 4)]);
    await flushed();
    expect(at(await metrics(), (await metrics()).activeConnections)).toBe(9);
    // Next bucket: a is gone, only b reports.
    now += 10_000;
    beat(b, 'b1', [tcp(52, 5)]);
    await flushed();
    m = await metrics();
    expect(at(m, m.activeConnections)).toBe(5);
    const listener = await metrics(`/v1/load-balancers/${lbId}/listeners/${tcpId}/metrics`);
    expect(listener.listenerId).toBe(tcpId);
    expect(at(listener, listener.activeConnections)).toBe(5);
    expect(listener.requestsPerSecond['2xx'].every((v: number | null) => v === null)).toBe(true);
  });

  it('counts http responses by class and upstream times, and sums listeners at the load balancer', async () => {
    l7 = await connectFake(t, { nodeId: 'l7-a', kind: 'l7', address: '127.0.0.21' });
    await settle();
    expect(heldListeners(l7).has(httpId)).toBe(true);
    const http = (n: number) => ({
      id: httpId,
      conns: n,
      bytesIn: n,
      bytesOut: n,
      drops: 0,
      active: 1,
      responses: [n, 0, 0, n / 10],
      upstreamMs: [0, 0, 0, n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    });
    beat(l7, 'l7', [http(100)]);
    now += 10_000;
    beat(b, 'b1', [tcp(52, 5)]);
    beat(l7, 'l7', [http(200), { ...tcp(1), id: 'lsn-not-sent-to-this-node' }]);
    await flushed();
    const m = await metrics();
    expect(total(m.requestsPerSecond['2xx'])).toBe(100);
    expect(total(m.requestsPerSecond['5xx'])).toBe(10);
    expect(at(m, m.upstreamTimeP50Ms)).toBeCloseTo(7.5);
    expect(at(m, m.activeConnections)).toBe(5 + 1);
    expect(total(m.newConnectionsPerSecond)).toBe(17 + 100);
  });

  it('keeps one string per listener per hour, sized at its first write, expiring after retention', async () => {
    const redis = new Redis(REDIS_URL);
    try {
      const hour = hourOf(Math.floor(now / 10_000) * 10);
      const key = (lsn: string) => `${id}:metrics:${lsn}:${hour}`;
      expect(await redis.type(key(tcpId))).toBe('string');
      expect(await redis.strlen(key(tcpId))).toBe(HTTP_PLANE_AT);
      expect(await redis.strlen(key(httpId))).toBe(HOUR_STRING_BYTES);
      const ttl = (await redis.expiretime(key(tcpId))) - hour;
      expect(ttl).toBe(3600 + 86_400 + 3600);
    } finally {
      redis.disconnect();
    }
  });
});

describe('routes', () => {
  it('answers 404 for another tenant’s load balancer and listener', async () => {
    const other = await newTenant(t.app, 'other');
    const lb = await call(t.app, other.token, 'GET', `/v1/load-balancers/${lbId}/metrics`);
    expect(lb.status).toBe(404);
    expect(lb.headers['content-type']).toContain('application/problem+json');
    const lsn = await call(t.app, other.token, 'GET', `/v1/load-balancers/${lbId}/listeners/${tcpId}/metrics`);
    expect(lsn.status).toBe(404);
    const wrong = await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}/listeners/lsn-nope/metrics`);
    expect(wrong.status).toBe(404);
  });

  it.each([
    // Against the schema: 400. Schema-valid but not answerable: 422.
    ['from after to', () => `from=${iso(1)}&to=${iso(0)}`, 'before', 422],
    ['beyond retention', () => `from=${iso(-49 * 3600)}&to=${iso(0)}`, 'retention', 422],
    ['too many points', () => `from=${iso(-86_390)}&to=${iso(3000)}&step=10`, 'points', 422],
    ['a step not a multiple of 10', () => 'step=15', 'multiple', 400],
    ['a date that is no date', () => 'from=yesterday', 'date-time', 400],
  ])('answers problem+json for %s', async (_what, query, words, status) => {
    const res = await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}/metrics?${query()}`);
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.body.detail).toContain(words);
  });

  it('defaults to the last 15 minutes at 10 s', async () => {
    const res = await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}/metrics`);
    expect(res.status).toBe(200);
    expect(res.body.step).toBe(10);
    expect(res.body.timestamps.length).toBeGreaterThanOrEqual(90);
  });
});

function iso(seconds: number): string {
  return new Date(now + seconds * 1000).toISOString();
}
