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

  it('names as many as fit in FAILED_LISTENERS_MAX_BYTES, the same ones each time, and counts the rest', () => {
    const failures = new ListenerFailures();
    // A thousand listeners on a VIP:port another process holds: as a list, about 90 KB.
    const current = Array.from({ length: 1000 }, (_, n) => failure(999 - n));
    const report = failures.reported(current);
    expect(Buffer.byteLength(JSON.stringify(report.named))).toBeLessThanOrEqual(FAILED_LISTENERS_MAX_BYTES);
    expect(report.named.length).toBeGreaterThan(50);
    expect(report.named.length + report.omitted).toBe(1000);
    expect(report.named).toEqual(Array.from({ length: report.named.length }, (_, n) => failure(n)));
    expect(failures.reported([...current].reverse())).toEqual(report);
  });
});
