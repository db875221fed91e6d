import { type ListenerTrafficReport, MAX_TRAFFIC_LISTENERS_PER_BEAT, TRAFFIC_REPORT_MAX_BYTES } from '@slb/model';
import { describe, expect, it } from 'vitest';
import { hugeTrafficEntry } from './traffic.fixtures.js';
import { sumReports, TrafficReporter, TrafficTally } from './traffic-tally.js';

describe('TrafficTally', () => {
  it('counts per listener, http ones with response classes and upstream buckets', () => {
    const tally = new TrafficTally();
    const t = tally.of('lsn-1', true);
    t.conns += 2;
    t.response(200);
    t.response(503);
    t.response(101);
    t.upstreamTime(0.5);
    t.upstreamTime(7);
    t.upstreamTime(60_000);
    const [r] = tally.reports();
    expect(r).toMatchObject({ id: 'lsn-1', conns: 2, responses: [2, 0, 0, 1] });
    expect(r?.upstreamMs?.[0]).toBe(1);
    expect(r?.upstreamMs?.[3]).toBe(1);
    expect(r?.upstreamMs?.at(-1)).toBe(1);
    tally.retain(new Set());
    expect(tally.reports()).toEqual([]);
  });

  it('keeps a held listener until its last holder lets go, and leaves unreported ones out', () => {
    const tally = new TrafficTally();
    tally.hold('a').conns = 5;
    tally.hold('a');
    tally.hold('http', false, false);
    tally.release('a');
    expect(tally.reports().map((r) => r.id)).toEqual(['a']);
    tally.release('a');
    expect(tally.reports()).toEqual([]);
  });
});

describe('TrafficReporter', () => {
  it('reports changed listeners each beat, idle ones every refreshBeats, at most maxPerBeat', () => {
    const tally = new TrafficTally();
    for (let i = 0; i < 400; i++) tally.hold(`l${i}`);
    const reporter = new TrafficReporter(() => tally.reports(), { refreshBeats: 5 });
    const seen = new Set<string>();
    for (let beat = 0; beat < 3; beat++) {
      const r = reporter.report();
      expect(r.listeners.length).toBeLessThanOrEqual(MAX_TRAFFIC_LISTENERS_PER_BEAT);
      for (const l of r.listeners) seen.add(l.id);
    }
    expect(seen.size).toBe(400); // the longest unreported go first: all of them within 3 beats
    tally.hold('l7').conns++;
    expect(reporter.report().listeners.map((l) => l.id)).toEqual(['l7']);
    expect(reporter.report().listeners).toEqual([]);
    expect(reporter.report().bootId).toBe(reporter.bootId);
  });
});

describe('TrafficReporter within the heartbeat', () => {
  it('reports no more bytes than TRAFFIC_REPORT_MAX_BYTES, and the ones left out in the next beats', () => {
    // Counters in the trillions (a long-lived node's byte counts) make 150 entries longer than the budget.
    const read = (): ListenerTrafficReport[] =>
      Array.from({ length: MAX_TRAFFIC_LISTENERS_PER_BEAT }, (_, i) =>
        hugeTrafficEntry(`lsn-${String(i).padStart(20, '0')}`),
      );
    expect(Buffer.byteLength(JSON.stringify(read()))).toBeGreaterThan(TRAFFIC_REPORT_MAX_BYTES);
    const reporter = new TrafficReporter(read);
    const first = reporter.report().listeners;
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(MAX_TRAFFIC_LISTENERS_PER_BEAT);
    expect(Buffer.byteLength(JSON.stringify(first))).toBeLessThanOrEqual(TRAFFIC_REPORT_MAX_BYTES);
    const second = reporter.report().listeners.map((l) => l.id);
    expect(second).toEqual(
      read()
        .map((l) => l.id)
        .slice(first.length, first.length + second.length),
    );
  });
});

describe('sumReports', () => {
  it('adds counters and, unless told not to, gauges', () => {
    const into = new Map();
    const r = { id: 'a', conns: 1, bytesIn: 2, bytesOut: 3, drops: 0, active: 4, responses: [1, 0, 0, 0] };
    sumReports(into, [r, r]);
    sumReports(into, [r], false);
    expect(into.get('a')).toMatchObject({ conns: 3, active: 8, responses: [3, 0, 0, 0] });
  });
});
