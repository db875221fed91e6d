import { FAILED_LISTENERS_MAX_BYTES } from '@slb/model';
import { describe, expect, it } from 'vitest';
import { ListenerFailures } from './listener-failures.js';

const failure = (n: number) => ({
  listenerId: `lsn-${String(n).padStart(20, '0')}`,
  reason: `cannot bind tcp 127.1.0.2:${10000 + n}: EADDRINUSE`,
});

describe('ListenerFailures.reported', () => {
  it('names every failure when they fit', () => {
    const failures = new ListenerFailures();
    const current = [failure(2), failure(1)];
    expect(failures.reported(current)).toEqual({ named: [failure(1), failure(2)], omitted: 0 });
  });

  it('names as many as fit in FAILED_LISTENERS_MAX_BYTES and counts the rest; the next report names the next ones', () => {
    const failures = new ListenerFailures();
    // A thousand listeners on a VIP:port another process holds: as a list, about 90 KB.
    const current = Array.from({ length: 1000 }, (_, n) => failure(999 - n));
    const report = failures.reported(current);
    expect(Buffer.byteLength(JSON.stringify(report.named))).toBeLessThanOrEqual(FAILED_LISTENERS_MAX_BYTES);
    expect(report.named.length).toBeGreaterThan(50);
    expect(report.named.length + report.omitted).toBe(1000);
    expect(report.named).toEqual(Array.from({ length: report.named.length }, (_, n) => failure(n)));
    // A round of ceil(1000 / named) reports names every one; the last wraps round to the first ids.
    const perReport = report.named.length;
    const rounds = Math.ceil(1000 / perReport);
    const named = new Set(report.named.map((f) => f.listenerId));
    let last = report;
    for (let r = 1; r < rounds; r++) {
      last = failures.reported([...current].reverse());
      expect(last.named.length + last.omitted).toBe(1000);
      for (const f of last.named) named.add(f.listenerId);
    }
    expect(named.size).toBe(1000);
    expect(last.named[0]).toEqual(failure(0));
    // Once they fit, every one is named again, from the first.
    expect(failures.reported(current.slice(0, 3))).toEqual({
      named: [failure(997), failure(998), failure(999)],
      omitted: 0,
    });
    expect(failures.reported(current).named[0]).toEqual(failure(0));
  });
});
