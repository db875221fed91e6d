import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { L4Node } from '../src/app.js';
import { backend, freePort, idServer, listener, newNode, snapshot, whoAnswers } from './helpers.js';

// One listener the node cannot build (an ACL it cannot compile, an address another listener holds) fails
// alone: the rest of the snapshot is applied, it keeps what it had, and later snapshots apply as usual.

describe('a listener the L4 node cannot build (real sockets)', () => {
  let node: L4Node;
  let a: Awaited<ReturnType<typeof idServer>>;
  let b: Awaited<ReturnType<typeof idServer>>;
  beforeEach(async () => {
    node = newNode();
    [a, b] = await Promise.all([idServer('a'), idServer('b')]);
  });
  afterEach(async () => {
    await node.close();
    await Promise.all([a.close(), b.close()]);
  });

  it('is refused alone and named; the others are applied; a later good snapshot is applied', async () => {
    const [p1, p2, p3] = [await freePort(), await freePort(), await freePort()];
    const l1 = listener(1, p1, { backends: [backend(1, a.port)] });
    const l2 = listener(2, p2, { backends: [backend(1, a.port)] });
    expect(await node.apply(snapshot(1, [l1, l2]))).toEqual([]);

    // l1 moves to b; l2 gets an ACL no node can compile (keeps serving as before); l3 is new and fine;
    // l4 asks for l3's address and port; l5 lists one server twice.
    const badAcl = { ...l2, acl: { mode: 'allow' as const, cidrs: ['10.0.0.0/99'] } };
    const l3 = listener(3, p3, { backends: [backend(2, b.port)] });
    const clash = listener(4, p3, { backends: [backend(2, b.port)] });
    const twice = listener(5, await freePort(), { backends: [backend(1, a.port), backend(1, b.port)] });
    const failed = await node.apply(snapshot(2, [{ ...l1, backends: [backend(2, b.port)] }, badAcl, l3, clash, twice]));
    expect(Object.fromEntries(failed.map((f) => [f.listenerId, f.reason]))).toEqual({
      [l2.id]: expect.stringContaining('10.0.0.0/99'),
      [clash.id]: expect.stringContaining(`is bound by listener ${l3.id}`),
      [twice.id]: expect.stringContaining('duplicate'),
    });
    expect(await whoAnswers(p1)).toBe('b');
    expect(await whoAnswers(p2)).toBe('a'); // its last good config
    expect(await whoAnswers(p3)).toBe('b');
    expect(node.current?.version).toBe(2);
    expect(await node.metrics.registry.getSingleMetricAsString('slb_l4_listener_failures_total')).toContain(
      'slb_l4_listener_failures_total 3',
    );

    // Version 3 fixes l2 (no ACL, backend b) and drops the clash: all applied.
    expect(await node.apply(snapshot(3, [l1, { ...l2, backends: [backend(2, b.port)] }, l3]))).toEqual([]);
    expect(await whoAnswers(p1)).toBe('a');
    expect(await whoAnswers(p2)).toBe('b');
    expect(node.current?.version).toBe(3);
  }, 30_000);
});
