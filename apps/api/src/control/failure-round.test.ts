import { describe, expect, it } from 'vitest';
import { FailureRound } from './failure-round.js';

const failure = (n: number, reason = 'cannot bind: EADDRINUSE') => ({
  listenerId: `lsn-${String(n).padStart(3, '0')}`,
  reason,
});
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => failure(from + i));
const ids = (out: { failures: { listenerId: string }[] }) => out.failures.map((f) => f.listenerId);

describe('FailureRound', () => {
  it('gathers a rotating node’s failures over one round of reports', () => {
    const round = new FailureRound();
    // 10 failing, 4 named per report: reports name 0-3, 4-7, 8-9 and 0-1.
    expect(round.take(range(0, 4), 6)).toEqual({ failures: range(0, 4), omitted: 6 });
    expect(round.take(range(4, 8), 6)).toEqual({ failures: range(0, 8), omitted: 2 });
    const whole = round.take([...range(0, 2), ...range(8, 10)], 6);
    expect(whole).toEqual({ failures: range(0, 10), omitted: 0 });
    // The next round goes on naming them: nothing changes.
    expect(round.take(range(2, 6), 6)).toEqual(whole);
  });

  it("lets a listener go once two rounds' worth of reports pass without it", () => {
    const round = new FailureRound();
    round.take(range(0, 4), 6);
    round.take(range(4, 8), 6);
    round.take([...range(0, 2), ...range(8, 10)], 6);
    // lsn-007 (last named in the second report) healed: 9 failing now, named 4 at a time, a round of 3.
    const nine = [...range(0, 7), failure(8), failure(9)];
    const window = (r: number) => Array.from({ length: 4 }, (_, i) => nine[(r * 4 + i) % 9]!);
    const heard: boolean[] = [];
    for (let r = 0; r < 6; r++) heard.push(ids(round.take(window(r), 5)).includes('lsn-007'));
    // Reports 4 to 8 are within two rounds (6) of the second; the ninth is not.
    expect(heard).toEqual([true, true, true, true, true, false]);
    expect(round.take(window(6), 5)).toEqual({ failures: nine, omitted: 0 });
  });

  it('takes a report that names every failure as the whole truth, and a new reason at once', () => {
    const round = new FailureRound();
    round.take(range(0, 4), 6);
    expect(round.take([failure(3)], 0)).toEqual({ failures: [failure(3)], omitted: 0 });
    expect(round.take([], 0)).toEqual({ failures: [], omitted: 0 });
    round.take(range(0, 4), 6);
    expect(round.take([failure(1, 'a certificate it cannot load')], 9).failures[1]).toEqual(
      failure(1, 'a certificate it cannot load'),
    );
  });
});
