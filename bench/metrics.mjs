// Traffic metrics, measured (issue 24): the cost of a heartbeat's traffic summary on a node and on the API
// with 1,000 listeners, Redis memory per listener per day, and the 24 h query at 10 s for one load balancer
// with 4 listeners (goal: a median ≤ 50 ms). Needs `npm run build` and Redis (REDIS_URL, default
// redis://127.0.0.1:6379); its keys live under a prefix of its own and are deleted at the end.
//
//   node bench/metrics.mjs
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { deleteRedisKeys } from '@slb/test-support/redis-keys';
import { Redis } from 'ioredis';
import { buildApp } from '../apps/api/dist/app.js';
import { TrafficIngest } from '../apps/api/dist/control/traffic-ingest.js';
import { hourOf, NodeMessage, UPSTREAM_TIME_BOUNDS_MS } from '../packages/model/dist/index.js';
import { TrafficReporter, TrafficTally } from '../packages/node-runtime/dist/index.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `bench-${randomUUID()}:metrics`;
const silent = { info() {}, warn() {}, error() {}, debug() {}, child: () => silent };
const say = (line) => console.log(line);
/** Redis's own CPU so far (ms, INFO cpu): shared with whatever else uses this Redis, so a rough figure. */
const redisCpuMs = async (redis) => {
  const info = await redis.info('cpu');
  const field = (name) => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1000;
};
const cpuMs = (fn) => {
  const start = process.cpuUsage();
  fn();
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
};

/** A node's tally with `n` busy http listeners (the largest entries), traffic added before every beat. */
function busyNode(n) {
  const tally = new TrafficTally();
  const listeners = Array.from({ length: n }, (_, i) => tally.of(`lsn-${String(i).padStart(20, '0')}`, true));
  const traffic = () => {
    for (const t of listeners) {
      t.conns += 37;
      t.bytesIn += 123_456;
      t.bytesOut += 9_876_543;
      t.active = 40 + (t.conns % 7);
      t.response(200);
      t.upstreamTime(7);
    }
  };
  return { tally, traffic };
}

// ---- 1. The node: a heartbeat's summary (read, pick, serialise) with 1,000 busy listeners.
{
  const { tally, traffic } = busyNode(1000);
  const reporter = new TrafficReporter(() => tally.reports());
  const beats = 300;
  let bytes = 0;
  let ms = 0;
  for (let i = 0; i < beats; i++) {
    traffic();
    ms += cpuMs(() => {
      const message = {
        type: 'heartbeat',
        load: { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 },
        traffic: reporter.report(),
      };
      bytes = JSON.stringify(message).length;
    });
  }
  say(
    `node: ${(ms / beats).toFixed(3)} ms CPU per heartbeat with 1,000 busy http listeners (${bytes} bytes, 150 listeners a beat)`,
  );
}

const redis = new Redis(REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
await new Promise((resolve, reject) => {
  redis.once('ready', resolve);
  redis.once('error', reject);
});

// ---- 2. The API: parse, check, deltas and the Redis pipeline of heartbeats from a node with 1,000 listeners.
{
  const { tally, traffic } = busyNode(1000);
  const reporter = new TrafficReporter(() => tally.reports());
  const check = TypeCompiler.Compile(NodeMessage);
  let now = Date.now();
  const ingest = new TrafficIngest(redis, `${prefix}:api`, silent, () => now);
  const beats = 300;
  const texts = [];
  for (let i = 0; i < beats; i++) {
    traffic();
    texts.push(
      JSON.stringify({
        type: 'heartbeat',
        load: { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 },
        traffic: reporter.report(),
      }),
    );
  }
  let ms = 0;
  let withoutTraffic = 0;
  const redisBefore = await redisCpuMs(redis);
  for (const text of texts) {
    now += 1000;
    ms += cpuMs(() => {
      const m = JSON.parse(text);
      if (!check.Check(m)) throw new Error('invalid heartbeat');
      ingest.heartbeat('node-1', m.traffic);
    });
    withoutTraffic += cpuMs(() =>
      check.Check(
        JSON.parse(
          '{"type":"heartbeat","load":{"activeConnections":0,"newConnectionsPerSecond":0,"requestsPerSecond":0}}',
        ),
      ),
    );
    await redis.ping(); // the pipeline's replies, counted below with the event loop's own work
  }
  const start = process.cpuUsage();
  await redis.ping();
  const tail = process.cpuUsage(start);
  const redisMs = (await redisCpuMs(redis)) - redisBefore;
  say(
    `api: ${(ms / beats).toFixed(3)} ms CPU per heartbeat of a node with 1,000 busy listeners (parse, check, deltas, pipeline of ~${Math.round(ingest.stats.written / beats)} BITFIELDs; ${(withoutTraffic / beats).toFixed(3)} ms for one without traffic; written ${ingest.stats.written}, dropped ${ingest.stats.dropped}; reply handling +${((tail.user + tail.system) / 1000).toFixed(2)} ms)`,
  );
  say(`redis: ~${(redisMs / beats).toFixed(3)} ms of Redis CPU per such heartbeat (INFO cpu, whole Redis)`);
}

// ---- 3 and 4. A day of data for one load balancer with 4 listeners, its memory, and the 24 h query.
const dir = mkdtempSync(join(tmpdir(), 'slb-bench-metrics-'));
const adminToken = 'bench-admin-token-0123456789';
let app;
try {
  let now = Date.now();
  app = await buildApp({
    dbPath: join(dir, 'slb.db'),
    adminToken,
    redisUrl: REDIS_URL,
    metricsKeyPrefix: `${prefix}:q`,
    namespaceOverrides: {
      healthQueue: `bench-${randomUUID()}`,
      healthKeyPrefix: `${prefix}:h`,
      sessionSyncPrefix: `${prefix}:s`,
    },
    metricsClock: () => now,
    addressPools: ['127.1.95.0/24'],
    backendPolicy: { defaultNetworks: ['127.0.0.0/8'], deny: [] },
  });
  await app.ready();
  const inject = async (method, url, body) => {
    const res = await app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${adminToken}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { payload: JSON.stringify(body) } : {}),
    });
    return JSON.parse(res.body);
  };
  const tenant = await inject('POST', '/v1/tenants', { name: 'bench' });
  const token = (await inject('POST', `/v1/tenants/${tenant.id}/tokens`, { role: 'member' })).token;
  /** `ms`: until the API's answer is complete (through inject: no socket), the client's JSON.parse not counted. */
  const asTenant = async (method, url, body) => {
    const t0 = performance.now();
    const res = await app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { payload: JSON.stringify(body) } : {}),
    });
    const ms = performance.now() - t0;
    return { status: res.statusCode, body: JSON.parse(res.body), bytes: res.body.length, ms };
  };
  const lb = (await asTenant('POST', '/v1/load-balancers', { name: 'bench' })).body;
  const sg = (
    await asTenant('POST', `/v1/load-balancers/${lb.id}/server-groups`, {
      name: 'p',
      servers: [{ address: '127.0.0.1', port: 9 }],
    })
  ).body;
  const listeners = [];
  for (const [protocol, port] of [
    ['tcp', 7001],
    ['tcp', 7002],
    ['http', 7080],
    ['http', 7081],
  ]) {
    listeners.push({
      protocol,
      ...(await asTenant('POST', `/v1/load-balancers/${lb.id}/listeners`, { protocol, port, serverGroupId: sg.id }))
        .body,
    });
  }
  // A day of 10 s buckets, one beat each (every field a busy listener has, each bucket), written from 24 h ago.
  const day = 8640;
  const ingest = new TrafficIngest(redis, `${prefix}:q`, silent, () => now);
  const start = now;
  now = start - day * 10_000;
  const counters = listeners.map(() => ({
    conns: 0,
    bytesIn: 0,
    bytesOut: 0,
    drops: 0,
    responses: [0, 0, 0, 0],
    upstreamMs: new Array(UPSTREAM_TIME_BOUNDS_MS.length + 1).fill(0),
  }));
  const writeStarted = performance.now();
  for (let b = 0; b < day; b++) {
    const report = listeners.map((l, i) => {
      const c = counters[i];
      c.conns += 300 + (b % 17);
      c.bytesIn += 1_234_567 + b;
      c.bytesOut += 98_765_432 + b;
      c.drops += b % 5 === 0 ? 1 : 0;
      const r = {
        id: l.id,
        conns: c.conns,
        bytesIn: c.bytesIn,
        bytesOut: c.bytesOut,
        drops: c.drops,
        active: 100 + (b % 50),
      };
      if (l.protocol === 'http') {
        c.responses[0] += 2900;
        c.responses[1] += 20;
        c.responses[2] += 50;
        c.responses[3] += b % 3;
        for (const k of [2, 3, 4, 5, 6]) c.upstreamMs[k] += 100 * k;
        Object.assign(r, { responses: [...c.responses], upstreamMs: [...c.upstreamMs] });
      }
      return r;
    });
    ingest.heartbeat('node-1', { bootId: 'b', listeners: report });
    now += 10_000;
    if (b % 200 === 0) await redis.ping();
  }
  await redis.ping();
  const writeMs = performance.now() - writeStarted;
  now = start;
  // Memory of the whole hours only (the day's first and last hour strings are as large, partly filled).
  const firstHour = hourOf(start / 1000 - day * 10) + 3600;
  const lastHour = hourOf(start / 1000) - 3600;
  let tcpBytes = 0;
  let httpBytes = 0;
  let keys = 0;
  let hours = 0;
  for (const l of listeners) {
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}:q:${l.id}:*`, 'COUNT', 1000);
      for (const k of found) {
        keys++;
        const hour = Number(k.slice(k.lastIndexOf(':') + 1));
        if (hour < firstHour || hour > lastHour) continue;
        const used = Number(await redis.memory('USAGE', k, 'SAMPLES', 0));
        if (l.protocol === 'http') httpBytes += used;
        else tcpBytes += used;
        hours++;
      }
      cursor = next;
    } while (cursor !== '0');
  }
  const perDay = (bytes) => ((bytes / (hours / 4)) * 24) / 2 / 1024;
  say(
    `redis: a day of 10 s buckets written in ${(writeMs / 1000).toFixed(1)} s (${keys} hour strings for 4 listeners, ${(writeMs / day).toFixed(3)} ms a beat of 4)`,
  );
  say(
    `redis: ${perDay(tcpBytes).toFixed(0)} KiB per tcp listener per day, ${perDay(httpBytes).toFixed(0)} KiB per http listener per day (MEMORY USAGE of 24 whole hour strings, every bucket busy)`,
  );

  const from = new Date(start - 86_400_000 + 10_000).toISOString();
  const to = new Date(start).toISOString();
  const url = `/v1/load-balancers/${lb.id}/metrics?from=${from}&to=${to}&step=10`;
  const runs = [];
  let answer;
  for (let i = 0; i < 12; i++) {
    answer = await asTenant('GET', url);
    runs.push(answer.ms);
  }
  if (answer.status !== 200) throw new Error(`query answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  runs.sort((a, b) => a - b);
  const points = answer.body.timestamps.length;
  const filled = answer.body.newConnectionsPerSecond.filter((v) => v !== null).length;
  say(
    `query: 24 h at 10 s for one LB with 4 listeners (${points} points, ${filled} with data, ${(answer.bytes / 1024).toFixed(0)} KiB): median ${runs[6].toFixed(1)} ms (goal ≤ 50 ms), best ${runs[0].toFixed(1)} ms, worst ${runs.at(-1).toFixed(1)} ms`,
  );
  const one = `/v1/load-balancers/${lb.id}/listeners/${listeners[2].id}/metrics?from=${new Date(start - 3600_000).toISOString()}&to=${to}`;
  say(
    `query: the last hour of one http listener at the default step: ${(await asTenant('GET', one)).ms.toFixed(1)} ms`,
  );
} finally {
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
  await deleteRedisKeys(REDIS_URL, [`${prefix}*`]);
  redis.disconnect();
}
