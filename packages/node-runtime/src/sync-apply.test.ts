import { describe, expect, it } from 'vitest';
import { applyStored, applyStreamMessage } from './sync-apply.js';
import type { SyncEntry } from './sync-message.js';
import type { SyncTarget } from './sync-scope.js';

const now = 1_000_000;

/** A target that takes every entry except those for server `unknown`, as a node's tables would. */
function target(): SyncTarget & { got: SyncEntry[] } {
  const got: SyncEntry[] = [];
  return {
    got,
    apply: (e) => e.serverId !== 'unknown' && got.push(e) > 0,
    dump: () => [],
    sizes: () => ({}),
  };
}

describe('a stream message', () => {
  it("applies a peer's batch, reporting each entry's lag, and counts bad entries", () => {
    const t = target();
    const lags: number[] = [];
    const batch = [
      ['flow', '10.0.0.1|5000', 'srv-1', 30_000, now - 40],
      ['persist', '10.0.0.2', 'unknown', 30_000, now],
      ['flow', '10.0.0.3|5000', 'srv-1', 10, now - 60_000],
      { not: 'an entry' },
    ];
    const got = applyStreamMessage(['o', 'peer#1', 'd', JSON.stringify(batch)], 'me#1', t, now, (ms) => lags.push(ms));
    expect(got).toEqual({ applied: 1, malformed: 1 });
    expect(t.got).toEqual([
      { kind: 'flow', key: '10.0.0.1|5000', serverId: 'srv-1', remainingMs: 29_960, at: now - 40 },
    ]);
    expect(lags).toEqual([40]);
  });

  it('skips what this process published, and counts a message without its fields as malformed', () => {
    const t = target();
    const data = JSON.stringify([['flow', 'k', 'srv-1', 30_000, now]]);
    expect(applyStreamMessage(['o', 'me#1', 'd', data], 'me#1', t, now, () => {})).toEqual({
      applied: 0,
      malformed: 0,
    });
    expect(applyStreamMessage(['d', data], 'me#1', t, now, () => {})).toEqual({ applied: 0, malformed: 1 });
    expect(t.got).toEqual([]);
  });
});

describe("a scope's stored entries", () => {
  it("applies peers' and this node's previous process's, not this process's own", () => {
    const t = target();
    const stored = {
      'flow|a': JSON.stringify(['peer#1', 'flow', 'a', 'srv-1', 30_000, now]),
      'flow|b': JSON.stringify(['me#old', 'flow', 'b', 'srv-2', 30_000, now]),
      'flow|c': JSON.stringify(['me#1', 'flow', 'c', 'srv-3', 30_000, now]),
      'flow|d': 'not json',
    };
    expect(applyStored(Object.values(stored), 'me#1', t, now)).toEqual({ applied: 2, malformed: 1 });
    expect(t.got.map((e) => e.key)).toEqual(['a', 'b']);
  });
});
