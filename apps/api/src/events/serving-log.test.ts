import { describe, expect, it } from 'vitest';
import { ServingLog, type ServingNode } from './serving-log.js';

const node = (lbs: string[]): ServingNode => ({ kind: 'l4', address: '10.0.0.1', lbs: new Set(lbs) });
const view = (entries: Record<string, string[]>) =>
  new Map(Object.entries(entries).map(([id, lbs]) => [id, node(lbs)]));

describe('ServingLog', () => {
  it('records joins and leaves per LB, and nothing while nothing moves', () => {
    const log = new ServingLog();
    const first = log.observe(view({ a: ['lb1', 'lb2'] }), 0);
    expect(first.changes.map((c) => `${c.nodeId}+${c.lbId}:${c.joined}`)).toEqual(['a+lb1:true', 'a+lb2:true']);
    expect(log.observe(view({ a: ['lb1', 'lb2'] }), 10).changes).toEqual([]);
    const gone = log.observe(view({}), 20);
    expect(gone.changes.map((c) => `${c.lbId}:${c.joined}`)).toEqual(['lb1:false', 'lb2:false']);
    expect(gone.changes[0]).toMatchObject({ nodeId: 'a', kind: 'l4', address: '10.0.0.1' });
  });

  it('bounds a flapping node over 1,000 LBs: a burst, then the net change once per interval', () => {
    const lbs = Array.from({ length: 1000 }, (_, i) => `lb${i}`);
    const log = new ServingLog({ burst: 3, intervalMs: 30_000 });
    let rows = 0;
    // Ten minutes of a node dropping and coming back every second.
    for (let ms = 0; ms < 600_000; ms += 1000) {
      const up = (ms / 1000) % 2 === 0;
      rows += log.observe(view(up ? { a: lbs } : {}), ms).changes.length;
    }
    // 3 at once, then one per 30 s: at most 3 + 20 recorded changes of 1,000 rows each.
    expect(rows).toBeLessThanOrEqual((3 + 20) * 1000);
    expect(rows).toBeGreaterThan(0);
    // Then it stays up: by the retry time the record has caught up with the truth, and stays quiet.
    let now = 600_000;
    for (let i = 0; i < 3; i++) {
      const out = log.observe(view({ a: lbs }), now);
      if (out.retryAt === null) break;
      now = out.retryAt;
    }
    expect(log.observe(view({ a: lbs }), now + 1)).toEqual({ changes: [], retryAt: null });
    expect(log.observe(view({}), now + 60_000).changes).toHaveLength(1000);
  });

  it('records nothing for a held-back node that is back as it was by the time it may be recorded', () => {
    const log = new ServingLog({ burst: 1, intervalMs: 30_000 });
    log.observe(view({ a: ['lb1'] }), 0);
    const down = log.observe(view({}), 1000);
    expect(down.changes).toEqual([]);
    expect(down.retryAt).toBe(30_000);
    expect(log.observe(view({ a: ['lb1'] }), 30_000)).toEqual({ changes: [], retryAt: null });
  });
});

describe('ServingLog.recordLbs', () => {
  const who = { kind: 'l7' as const, address: '10.0.0.2' };
  const said = (out: { changes: { lbId: string; joined: boolean }[] }) =>
    out.changes.map((c) => `${c.lbId}:${c.joined}`);

  it('records the named LBs against the record, and is what observing the whole view would record', () => {
    const log = new ServingLog();
    log.observe(view({ a: ['lb1', 'lb2'] }), 0);
    // lb2 was recorded already and lb9 never was: only lb3's join and lb1's leave are news.
    expect(said(log.recordLbs('a', who, ['lb2', 'lb3'], ['lb1', 'lb9'], 10))).toEqual(['lb3:true', 'lb1:false']);
    // The record now equals the view it stands for: observing that view finds nothing to record.
    expect(log.observe(view({ a: ['lb2', 'lb3'] }), 20)).toEqual({ changes: [], retryAt: null });
  });

  it('starts a node it had no record of, and forgets one left serving nothing', () => {
    const log = new ServingLog();
    const joined = log.recordLbs('b', who, ['lb1'], [], 0);
    expect(joined).toEqual({
      changes: [{ nodeId: 'b', kind: 'l7', address: '10.0.0.2', lbId: 'lb1', joined: true }],
      retryAt: null,
    });
    expect(said(log.recordLbs('b', who, [], ['lb1'], 10))).toEqual(['lb1:false']);
    expect(log.observe(view({}), 20).changes).toEqual([]);
    expect(log.recordLbs('b', who, [], ['lb1'], 30)).toEqual({ changes: [], retryAt: null });
  });

  it('holds a change back as observe would, recording nothing and naming when to look again', () => {
    const log = new ServingLog({ burst: 1, intervalMs: 30_000 });
    expect(said(log.recordLbs('a', who, ['lb1'], [], 0))).toEqual(['lb1:true']);
    const held = log.recordLbs('a', who, ['lb2'], [], 10);
    expect(held).toEqual({ changes: [], retryAt: 30_000 });
    // Nothing was recorded: observing the whole view by then records the net change, lb2's join.
    expect(log.observe(view({ a: ['lb1', 'lb2'] }), 20)).toEqual({ changes: [], retryAt: 30_000 });
    expect(said(log.observe(view({ a: ['lb1', 'lb2'] }), 30_000))).toEqual(['lb2:true']);
  });
});
