import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { L4Node } from '../src/app.js';
import { backend, freePort, idServer, listener, newNode, snapshot, whoAnswers } from './helpers.js';

/**
 * Listeners of one server group carry the same servers; a fleet's snapshot parsed into one object per
 * listener and server held 500,000 backend objects for 100,000 servers (issue #22). Applied, equal
 * backends are one object, and every listener still serves through its own pool.
 */
describe('listeners of one server group share their backend objects (real sockets)', () => {
  let node: L4Node;
  let a: Awaited<ReturnType<typeof idServer>>;

  beforeEach(async () => {
    node = newNode();
    a = await idServer('a');
  });
  afterEach(async () => {
    await node.close();
    await a.close();
  });

  it('two listeners with equal backends share one object each, and both serve', async () => {
    const [p1, p2] = [await freePort(), await freePort()];
    // As JSON.parse gives them: equal content, distinct objects.
    const s = snapshot(1, [
      listener(1, p1, { backends: [backend(1, a.port), backend(2, a.port, { weight: 0 })] }),
      listener(2, p2, { backends: [backend(1, a.port), backend(2, a.port, { weight: 0 })] }),
    ]);
    const [l1, l2] = s.listeners as [(typeof s.listeners)[number], (typeof s.listeners)[number]];
    expect(l1.backends[0]).not.toBe(l2.backends[0]);
    await node.apply(s);
    expect(l2.backends[0]).toBe(l1.backends[0]);
    expect(l2.backends[1]).toBe(l1.backends[1]);
    expect(l2.backends).toBe(l1.backends); // one array too: saved to disk once (state-file.ts)
    expect(await whoAnswers(p1)).toBe('a');
    expect(await whoAnswers(p2)).toBe('a');
  });

  it('a server whose weight or health differs between listeners keeps its own object', async () => {
    const [p1, p2] = [await freePort(), await freePort()];
    const s = snapshot(1, [
      listener(1, p1, { backends: [backend(1, a.port)] }),
      listener(2, p2, { backends: [backend(1, a.port, { weight: 5 })] }),
    ]);
    await node.apply(s);
    const [l1, l2] = s.listeners as [(typeof s.listeners)[number], (typeof s.listeners)[number]];
    expect(l2.backends[0]).not.toBe(l1.backends[0]);
    expect(l2.backends).not.toBe(l1.backends);
    expect(l2.backends[0]?.weight).toBe(5);
    expect(l1.backends[0]?.weight).toBe(10);
  });
});
