import { connect, type Socket } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { listener, snapshot, startApp, startBackend } from './helpers.js';

// Fast-path connections are counted and drained like node:http ones: an idle keep-alive connection is
// closed at once when its listener goes, a busy one finishes its response and is then closed.

const gauge = async (app: { metrics: { activeConnections: { get(): Promise<{ values: { value: number }[] }> } } }) =>
  (await app.metrics.activeConnections.get()).values.reduce((s, v) => s + v.value, 0);

function open(port: number): Promise<{ s: Socket; got: () => string; closed: Promise<number> }> {
  return new Promise((resolve) => {
    let got = '';
    const s = connect(port, '127.0.0.1', () => resolve({ s, got: () => got, closed }));
    s.on('data', (d) => (got += d.toString('latin1')));
    s.on('error', () => {});
    const closed = new Promise<number>((r) => s.on('close', () => r(Date.now())));
  });
}

describe('drain (fast path)', () => {
  it('counts fast connections, closes an idle one at once and a busy one after its response', async () => {
    let release: () => void = () => {};
    const be = await startBackend('a', (req, res) => {
      req.resume();
      if (req.url === '/slow') release = () => res.end('slow done');
      else res.end('ok');
    });
    const l = listener({ backends: [be.spec] });
    const node = await startApp(l, { drainMs: 3000 });
    const idle = await open(node.direct);
    idle.s.write('GET / HTTP/1.1\r\nHost: h\r\n\r\n');
    const busy = await open(node.direct);
    busy.s.write('GET /slow HTTP/1.1\r\nHost: h\r\n\r\n');
    for (let i = 0; i < 50 && !(idle.got().includes('ok') && be.requests.length === 2); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await gauge(node.app)).toBe(2);

    const removing = node.app.apply(snapshot([], 2));
    const started = Date.now();
    expect((await idle.closed) - started).toBeLessThan(500);
    await removing;
    setTimeout(() => release(), 200);
    const busyClosed = await busy.closed;
    expect(busyClosed - started).toBeGreaterThanOrEqual(150);
    expect(busy.got()).toContain('slow done');
    await vi.waitFor(async () => expect(await gauge(node.app)).toBe(0));
    await node.app.close();
    await be.close();
  });
});
