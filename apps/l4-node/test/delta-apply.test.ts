import { applyListenerDelta } from '@slb/node-runtime';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { L4Node } from '../src/app.js';
import { backend, freePort, idServer, listener, newNode, snapshot, whoAnswers } from './helpers.js';

/**
 * A delta applied with its change list (as the control channel does): only the named listeners are
 * touched, and the result is what a full pass over the same snapshot would give.
 */
describe('applying a delta by its change list (real sockets)', () => {
  let node: L4Node;
  let a: Awaited<ReturnType<typeof idServer>>;
  let b: Awaited<ReturnType<typeof idServer>>;
  let ports: number[];

  beforeEach(async () => {
    node = newNode();
    [a, b] = await Promise.all([idServer('a'), idServer('b')]);
    ports = [await freePort(), await freePort(), await freePort(), await freePort()];
  });
  afterEach(async () => {
    await node.close();
    await Promise.all([a.close(), b.close()]);
  });

  it('updates, removes, re-binds and adds exactly the listeners the delta names', async () => {
    const [p1, p2, p3, p4] = ports as [number, number, number, number];
    const l1 = listener(1, p1, { backends: [backend(1, a.port)] });
    const l2 = listener(2, p2, { backends: [backend(1, a.port)] });
    const l3 = listener(3, p3, { backends: [backend(1, a.port)] });
    const base = snapshot(1, [l1, l2, l3]);
    await node.apply(base);
    const untouched = node.listeners.get(l3.id);

    // l1 moves to backend b, l2 goes, l3's twin l3b takes port p4 (new), and nothing else is named.
    const upsert = [{ ...l1, backends: [backend(2, b.port)] }, listener(4, p4, { backends: [backend(2, b.port)] })];
    const remove = [l2.id];
    const next = snapshot(2, applyListenerDelta(base.listeners, upsert, remove));
    await node.apply(next, { upsert, remove, l7NodesChanged: false });

    expect(await whoAnswers(p1)).toBe('b');
    await expect(whoAnswers(p2)).rejects.toThrow();
    expect(await whoAnswers(p3)).toBe('a');
    expect(await whoAnswers(p4)).toBe('b');
    expect(node.listeners.get(l3.id)).toBe(untouched);
    expect([...node.listeners.keys()].sort()).toEqual([l1.id, l3.id, upsert[1]!.id].sort());

    // A port change in a delta re-binds the listener.
    const moved = [{ ...l3, port: p2 }];
    await node.apply(snapshot(3, applyListenerDelta(next.listeners, moved, [])), {
      upsert: moved,
      remove: [],
      l7NodesChanged: false,
    });
    expect(await whoAnswers(p2)).toBe('a');
    await expect(whoAnswers(p3)).rejects.toThrow();
  });
});
