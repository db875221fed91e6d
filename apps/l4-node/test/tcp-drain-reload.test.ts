import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { L4Node } from '../src/app.js';
import { backend, freePort, idServer, LineClient, listener, newNode, rid, snapshot, whoAnswers } from './helpers.js';

describe('draining and live reload (real sockets)', () => {
  let node: L4Node;
  let a: Awaited<ReturnType<typeof idServer>>;
  let b: Awaited<ReturnType<typeof idServer>>;
  let port = 0;

  beforeEach(async () => {
    node = newNode();
    [a, b] = await Promise.all([idServer('a'), idServer('b')]);
    port = await freePort();
  });

  afterEach(async () => {
    await node.close();
    await Promise.all([a.close(), b.close()]);
  });

  it('a removed backend keeps its connection until the drain timeout, then it is closed', async () => {
    const only = listener(1, port, { scheduler: 'rr', connectionDrainTimeout: 1, backends: [backend(1, a.port)] });
    await node.apply(snapshot(1, [only]));
    const long = await LineClient.connect(port);
    expect(await long.line()).toBe('a');

    const t0 = Date.now();
    await node.apply(snapshot(2, [{ ...only, backends: [backend(2, b.port)] }]));
    // Still served by a during the drain window; new connections go to b.
    expect(await long.echo('still here')).toBe('still here');
    expect(await whoAnswers(port)).toBe('b');
    await long.closed;
    const elapsed = Date.now() - t0;
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(3000);
  });

  it('weight 0 drains too: no new connections, existing ones live until the timeout', async () => {
    const two = listener(1, port, {
      scheduler: 'rr',
      connectionDrainTimeout: 1,
      backends: [backend(1, a.port), backend(2, b.port)],
    });
    await node.apply(snapshot(1, [two]));
    const onA = await LineClient.connect(port);
    expect(await onA.line()).toBe('a');
    await node.apply(snapshot(2, [{ ...two, backends: [backend(1, a.port, { weight: 0 }), backend(2, b.port)] }]));
    for (let i = 0; i < 4; i++) expect(await whoAnswers(port)).toBe('b');
    expect(await onA.echo('draining')).toBe('draining');
    await onA.closed;
  });

  it('a reload keeps live connections and adds and removes listeners and backends', async () => {
    const port2 = await freePort();
    const first = listener(1, port, { scheduler: 'rr', backends: [backend(1, a.port)] });
    const other = listener(2, port2, { backends: [backend(1, a.port)] });
    await node.apply(snapshot(1, [first, other]));
    const live = await LineClient.connect(port);
    expect(await live.line()).toBe('a');

    // Same listener with another backend and scheduler; the second listener goes, a third comes.
    const port3 = await freePort();
    await node.apply(
      snapshot(2, [
        { ...first, scheduler: 'wlc', backends: [backend(1, a.port), backend(2, b.port)] },
        listener(3, port3, { backends: [backend(2, b.port)] }),
      ]),
    );
    expect(await live.echo('after reload')).toBe('after reload');
    expect(await whoAnswers(port)).toBe('b'); // wlc: a has the live connection, b has none
    expect(await whoAnswers(port3)).toBe('b');
    await expect(whoAnswers(port2)).rejects.toThrow();
    expect(await live.echo('still alive')).toBe('still alive');
    expect(node.current?.version).toBe(2);
  });

  it('fails open when every backend is unhealthy, and counts it', async () => {
    await node.apply(
      snapshot(1, [
        listener(1, port, {
          backends: [backend(1, a.port, { healthy: false }), backend(2, b.port, { healthy: false })],
        }),
      ]),
    );
    expect(['a', 'b']).toContain(await whoAnswers(port));
    const text = await node.metrics.registry.getSingleMetricAsString('slb_l4_fail_open_total');
    expect(text).toMatch(/\} 1$/m);
  });

  it('a removed backend and a removed listener leave /metrics once their last connection is closed', async () => {
    const port2 = await freePort();
    const kept = listener(1, port, { scheduler: 'rr', connectionDrainTimeout: 1, backends: [backend(1, a.port)] });
    const removed = listener(2, port2, { backends: [backend(2, b.port)] });
    await node.apply(snapshot(1, [kept, removed]));
    const long = await LineClient.connect(port);
    expect(await long.line()).toBe('a');
    expect(await whoAnswers(port2)).toBe('b');
    const series = async () => (await node.metrics.registry.metrics()).split('\n').filter((l) => l.startsWith('slb_'));
    const srv1 = new RegExp(`backend="${rid('srv', 1)}"`);
    const lsn2 = new RegExp(`listener="${rid('lsn', 2)}"`);
    expect((await series()).some((l) => srv1.test(l))).toBe(true);
    expect((await series()).some((l) => lsn2.test(l))).toBe(true);

    // Backend 1 leaves listener 1 (its connection drains for 1 s); listener 2 goes.
    await node.apply(snapshot(2, [{ ...kept, backends: [backend(3, b.port)] }]));
    expect(await whoAnswers(port)).toBe('b');
    expect((await series()).some((l) => lsn2.test(l))).toBe(false);
    expect((await series()).some((l) => srv1.test(l))).toBe(true); // still has a connection
    await long.closed;
    // The node's side of the session ends a moment after the client sees the close.
    for (let i = 0; i < 50 && (await series()).some((l) => srv1.test(l)); i++)
      await new Promise((r) => setTimeout(r, 20));
    expect((await series()).some((l) => srv1.test(l))).toBe(false);
    // The listener that stays keeps its series, and so does the backend that replaced the old one.
    expect((await series()).some((l) => l.includes(rid('srv', 3)))).toBe(true);
    expect((await series()).some((l) => l.includes(`listener="${rid('lsn', 1)}"`))).toBe(true);
  });

  it('sends no new flows to an unhealthy backend while a healthy one exists', async () => {
    await node.apply(
      snapshot(1, [
        listener(1, port, { scheduler: 'rr', backends: [backend(1, a.port, { healthy: false }), backend(2, b.port)] }),
      ]),
    );
    for (let i = 0; i < 5; i++) expect(await whoAnswers(port)).toBe('b');
  });
});
