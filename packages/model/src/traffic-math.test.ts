import { describe, expect, it } from 'vitest';
import type { ListenerTrafficReport } from './channel.js';
import { MAX_METRICS_POINTS, METRICS_RETENTION_SECONDS } from './traffic.js';
import {
  BucketTable,
  bucketOf,
  counterDelta,
  hoursOf,
  percentileMs,
  planMetricsQuery,
  seriesOf,
  TrafficDeltas,
} from './traffic-math.js';

const T0 = Date.parse('2030-01-01T00:00:00Z');
const report = (id: string, conns: number, active = 0, extra: Partial<ListenerTrafficReport> = {}) => ({
  id,
  conns,
  bytesIn: conns * 100,
  bytesOut: conns * 1000,
  drops: 0,
  active,
  ...extra,
});

describe('counterDelta', () => {
  it('subtracts, and restarts from the new value when any counter went backwards', () => {
    expect(counterDelta([1, 2, 3], [4, 2, 5])).toEqual([3, 0, 2]);
    expect(counterDelta([10, 2, 3], [4, 5, 5])).toEqual([4, 5, 5]);
    expect(counterDelta(undefined, [4, 5])).toEqual([4, 5]);
  });
});

describe('TrafficDeltas', () => {
  it('takes the first beat of a node as a baseline, then counts deltas', () => {
    const d = new TrafficDeltas();
    expect(d.apply('n1', 'boot-a', [report('l1', 1000, 7)], T0)).toEqual([]);
    const [w] = d.apply('n1', 'boot-a', [report('l1', 1003, 7)], T0 + 1000);
    expect(w?.counters?.slice(0, 3)).toEqual([3, 300, 3000]);
    // Same bucket as the baseline: the gauge waits for the next bucket (the old process may have written it).
    expect(w?.gauge).toBeNull();
    const [next] = d.apply('n1', 'boot-a', [report('l1', 1003, 9)], T0 + 11_000);
    expect(next).toMatchObject({ bucket: bucketOf(T0 + 11_000), counters: null, gauge: 9 });
  });

  it('keeps a node gauge per bucket as differences from its last value in the bucket', () => {
    const d = new TrafficDeltas({ baselineMs: 0 });
    d.apply('n1', 'b', [], T0 - 10_000); // the node's first bucket here is the one before
    expect(d.apply('n1', 'b', [report('l1', 0, 5)], T0 + 1000)[0]?.gauge).toBe(5);
    expect(d.apply('n1', 'b', [report('l1', 0, 5)], T0 + 2000)).toEqual([]);
    expect(d.apply('n1', 'b', [report('l1', 0, 2)], T0 + 3000)[0]?.gauge).toBe(-3);
    // A new bucket: the whole value again, a zero included (it says the node reported).
    expect(d.apply('n1', 'b', [report('l1', 0, 0)], T0 + 10_000)[0]?.gauge).toBe(0);
  });

  it('restarts every counter from its new value under a new boot id, the gauge counting the node once', () => {
    const d = new TrafficDeltas();
    d.apply('n1', 'a', [report('l1', 500)], T0 - 10_000);
    d.apply('n1', 'a', [report('l1', 510, 6)], T0 + 1000);
    const [w] = d.apply('n1', 'b', [report('l1', 4, 1)], T0 + 2000);
    expect(w?.counters?.[0]).toBe(4);
    expect(w?.gauge).toBe(-5);
  });

  it('counts a listener new on a known node from zero after the baseline window, not before', () => {
    const d = new TrafficDeltas({ baselineMs: 5000 });
    d.apply('n1', 'a', [report('l1', 1)], T0);
    expect(d.apply('n1', 'a', [report('l2', 900)], T0 + 1000)).toEqual([]);
    expect(d.apply('n1', 'a', [report('l3', 2)], T0 + 6000)[0]?.counters?.[0]).toBe(2);
  });

  it('treats a listener silent for longer than staleMs as a baseline', () => {
    const d = new TrafficDeltas({ baselineMs: 0, staleMs: 10_000 });
    d.apply('n1', 'a', [report('l1', 1)], T0);
    expect(d.apply('n1', 'a', [report('l1', 1000)], T0 + 60_000)).toEqual([
      { listenerId: 'l1', bucket: bucketOf(T0 + 60_000), counters: null, gauge: 0, http: false },
    ]);
  });
});

describe('buckets and hours', () => {
  it('marks an http listener’s writes, so its hour string gets the http plane', () => {
    const d = new TrafficDeltas({ baselineMs: 0 });
    d.apply('n1', 'b', [], T0 - 10_000);
    const [w] = d.apply('n1', 'b', [report('l1', 1, 0, { responses: [1, 0, 0, 0] })], T0);
    expect(w?.http).toBe(true);
  });

  it('reads the hour strings a plan spans, each from the bucket it starts at', () => {
    const hour = T0 / 1000;
    const plan = { from: hour + 3000, to: hour + 3900, step: 60, points: 15 };
    expect(hoursOf(plan)).toEqual([
      { hour, from: 300, to: 360 },
      { hour: hour + 3600, from: 0, to: 30 },
    ]);
  });
});

describe('percentileMs', () => {
  it('interpolates within the bucket holding the rank', () => {
    const counts = new Array(14).fill(0);
    counts[3] = 100; // (5, 10] ms
    expect(percentileMs(counts, 0.5)).toBeCloseTo(7.5);
    counts[13] = 1; // slower than 10 s
    expect(percentileMs(counts, 1)).toBe(10_000);
    expect(percentileMs(new Array(14).fill(0), 0.5)).toBeNull();
  });
});

describe('planMetricsQuery', () => {
  const now = T0 + 3600_000 * 30;
  const iso = (ms: number) => new Date(ms).toISOString();

  it('defaults to the last 15 minutes at 10 s', () => {
    const r = planMetricsQuery({}, now);
    expect(r).toEqual({ ok: true, plan: { from: now / 1000 - 900, to: now / 1000, step: 10, points: 90 } });
  });

  it('serves 24 h at 10 s, and aligns points to the step', () => {
    const r = planMetricsQuery({ from: iso(now - METRICS_RETENTION_SECONDS * 1000), to: iso(now), step: 10 }, now);
    expect(r.ok && r.plan.points).toBe(MAX_METRICS_POINTS);
    const odd = planMetricsQuery({ from: iso(now - 95_000), to: iso(now), step: 60 }, now);
    expect(odd.ok && odd.plan.from % 60).toBe(0);
    if (odd.ok) expect(hoursOf(odd.plan).map((h) => h.to - h.from)).toEqual([12]);
  });

  it('refuses an empty or reversed range, one beyond retention, and too many points', () => {
    expect(planMetricsQuery({ from: iso(now), to: iso(now) }, now)).toMatchObject({ ok: false });
    expect(planMetricsQuery({ from: iso(now - 49 * 3600_000), to: iso(now) }, now)).toMatchObject({
      ok: false,
      detail: expect.stringContaining('retention'),
    });
    const tooMany = planMetricsQuery({ from: iso(now - 86_000_000), to: iso(now - 1000), step: 10 }, now);
    expect(tooMany.ok).toBe(true);
    const over = planMetricsQuery({ from: iso(now - 86_400_000 - 5000), to: iso(now + 20_000), step: 10 }, now);
    expect(over).toMatchObject({ ok: false, detail: expect.stringContaining('points') });
  });
});

describe('seriesOf', () => {
  it('gives rates per second, the last gauge of each step, null where nothing reported', () => {
    const plan = { from: T0 / 1000, to: T0 / 1000 + 60, step: 30, points: 2 };
    const table = new BucketTable(plan.from, 6);
    // Bucket 0: 30 connections, a gauge of 2; bucket 1: a gauge of 4, 60 2xx, 10 upstream times in (2.5, 5] ms.
    table.reported.set([1, 1]);
    table.gaugeSeen.set([1, 1]);
    table.gauge.set([2, 4]);
    table.counters[0]![0] = 30;
    table.counters[4]![1] = 60;
    table.counters[10]![1] = 10;
    const s = seriesOf(table, plan, true);
    expect(s.timestamps).toEqual([plan.from, plan.from + 30]);
    expect(s.newConnectionsPerSecond).toEqual([1, null]);
    expect(s.activeConnections).toEqual([4, null]);
    expect(s.requestsPerSecond['2xx']).toEqual([2, null]);
    expect(s.upstreamTimeP50Ms[0]).toBeCloseTo(3.75);
    expect(seriesOf(table, plan, false).requestsPerSecond['2xx']).toEqual([null, null]);
  });
});
