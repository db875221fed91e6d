import { describe, expect, it } from 'vitest';
import type { NewEvent } from '../events/store.js';
import { ManualClock } from './clock.js';
import type { CompiledLb } from './compile-lb.js';
import type { LbSummary } from './lb-rows.js';
import type { Session } from './node-session.js';
import { ServingRecorder } from './serving-events.js';

/** The hub's side of a recorder: sessions, placement and compiled LBs, changed by hand; reads of `lbs` counted. */
function fleet(options: { alwaysWhole: boolean }, clock = new ManualClock()) {
  const sessions = new Map<string, Session>();
  const placement = new Map<string, string[]>();
  const compiled = new Map<string, CompiledLb>();
  const events: string[] = [];
  let lbReads = 0;
  const recorder = new ServingRecorder(
    { record: (e: NewEvent) => events.push(`${e.resourceId} ${e.detail?.change} ${e.loadBalancerId}`) },
    clock,
    undefined,
    () => ({
      sessions: sessions.values(),
      sessionOf: (id) => sessions.get(id),
      isOnline: () => true,
      placement,
      get lbs(): LbSummary[] {
        lbReads++;
        return [...compiled.keys()].map((id) => ({ id, configVersion: 1, mode: 'all' as const, nodeCount: null }));
      },
      compiled,
    }),
  );
  return {
    events,
    lbReads: () => lbReads,
    connect(nodeId: string, kind: 'l4' | 'l7') {
      sessions.set(nodeId, { nodeId, kind, address: `10.0.0.${sessions.size + 1}` } as unknown as Session);
    },
    put(lbId: string, l4Nodes: string[], http: boolean) {
      placement.set(lbId, l4Nodes);
      compiled.set(lbId, { configVersion: 1, address: null, l4: [], l7: http ? [{} as never] : [] });
    },
    remove(lbId: string) {
      placement.delete(lbId);
      compiled.delete(lbId);
    },
    /** A recompile as the hub reports it: the LBs whose config changed, and those placed elsewhere. */
    recompiled(changed: string[], moved: string[], fullDiff = false) {
      if (options.alwaysWhole) recorder.markDirty();
      recorder.recompiled(fullDiff, '[]', changed, moved);
    },
  };
}

/** Creates, an HTTP listener added, a delete, then a node joining: the hub's writes, in order. */
function run(f: ReturnType<typeof fleet>) {
  f.connect('l4-a', 'l4');
  f.connect('l7-a', 'l7');
  f.put('lb1', ['l4-a'], false);
  f.recompiled(['lb1'], ['lb1'], true);
  const afterFirst = f.lbReads();
  f.put('lb2', ['l4-a'], true);
  f.recompiled(['lb2'], ['lb2']);
  f.put('lb1', ['l4-a'], true); // lb1's first HTTP listener: its config changed, its placement did not
  f.recompiled(['lb1'], []);
  f.put('lb1', ['l4-a'], true); // a change that moves nothing
  f.recompiled(['lb1'], []);
  f.remove('lb2');
  f.recompiled(['lb2'], ['lb2']);
  const beforeJoin = f.lbReads();
  f.connect('l4-b', 'l4');
  f.put('lb1', ['l4-a', 'l4-b'], true);
  f.recompiled([], ['lb1']);
  return { afterFirst, beforeJoin };
}

describe('ServingRecorder', () => {
  it("looks at a write's LBs alone, and records what looking at the whole fleet records", () => {
    const incremental = fleet({ alwaysWhole: false });
    const reads = run(incremental);
    const whole = fleet({ alwaysWhole: true });
    run(whole);

    expect(incremental.events).toEqual([
      'l4-a joined lb1',
      'l4-a joined lb2',
      'l7-a joined lb2',
      'l7-a joined lb1',
      'l4-a left lb2',
      'l7-a left lb2',
      'l4-b joined lb1',
    ]);
    expect([...incremental.events].sort()).toEqual([...whole.events].sort());
    // The whole fleet was read for the first look and for the node that joined, not for the writes between.
    expect(reads.afterFirst).toBe(1);
    expect(reads.beforeJoin).toBe(1);
    expect(incremental.lbReads()).toBe(2);
    expect(whole.lbReads()).toBe(6);
  });

  it('while the log holds a busy node back, a write reads none of the fleet; the retry records the net change', () => {
    const clock = new ManualClock();
    const f = fleet({ alwaysWhole: false }, clock);
    f.connect('l4-a', 'l4');
    f.recompiled([], [], true);
    // The burst (5 changes of the node at once), then 20 creates held back.
    for (let i = 0; i < 25; i++) {
      f.put(`lb${i}`, ['l4-a'], false);
      f.recompiled([`lb${i}`], [`lb${i}`]);
    }
    expect(f.events).toHaveLength(5);
    expect(f.lbReads()).toBe(1);
    clock.advance(30_000);
    // One token: the node's net change since its last record, everything held back, read from the whole fleet.
    expect(f.events).toHaveLength(25);
    expect(f.events.at(-1)).toBe('l4-a joined lb24');
    expect(f.lbReads()).toBe(2);
  });
});
