import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { L4Node, type L4NodeOptions } from '../src/app.js';
import { L4Metrics } from '../src/metrics.js';
import type { TcpListener } from '../src/tcp-listener.js';
import { attempt, backend, freePort, idServer, LineClient, listener, snapshot } from './helpers.js';

function refused(metrics: L4Metrics, reason: string): Promise<number> {
  return metrics.registry.getSingleMetricAsString('slb_l4_refused_total').then((text) => {
    const m = new RegExp(`slb_l4_refused_total\\{[^}]*reason="${reason}"[^}]*\\} (\\d+)`).exec(text);
    return m ? Number(m[1]) : 0;
  });
}

describe('TCP connection limits', () => {
  const cleanup: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  async function setup(maxConnections: number | undefined, limits: L4NodeOptions['limits']) {
    const server = await idServer('b');
    const metrics = new L4Metrics({ defaultMetrics: false });
    const node = new L4Node({ logger: pino({ level: 'silent' }), metrics, limits });
    const port = await freePort();
    const l = listener(1, port, { maxConnections, backends: [backend(1, server.port)] });
    await node.apply(snapshot(1, [l]));
    cleanup.push(
      () => server.close(),
      () => node.close(),
    );
    return { server, metrics, port, node, l, lsn: node.listeners.get(l.id) as TcpListener };
  }

  it('refuses the N+1th concurrent connection of a listener with maxConnections N, and serves the N', async () => {
    const { server, metrics, port, node, lsn } = await setup(3, { maxConnectionsPerClient: 0 });
    const open = await Promise.all([1, 2, 3].map(() => LineClient.connect(port)));
    cleanup.push(() => {
      for (const c of open) c.destroy();
    });
    for (const c of open) expect(await c.line()).toBe('b');
    const extra = await attempt(port, '127.0.0.1');
    expect(extra.outcome).toBe('refused');
    // Closed before any backend connect: the backend saw only the three.
    expect(server.connections()).toBe(3);
    expect(await refused(metrics, 'listener_limit')).toBe(1);
    for (const [i, c] of open.entries()) expect(await c.echo(`still ${i}`)).toBe(`still ${i}`);
    // A slot freed by a client that left is taken by the next one.
    open[0]!.destroy();
    await vi.waitUntil(() => lsn.openCount === 2, 10_000);
    const next = await attempt(port, '127.0.0.1');
    expect(next.outcome).toBe('served');
    next.socket.destroy();
    // Every descriptor taken (served or refused) is given back: only the listening socket is left.
    for (const c of open) c.destroy();
    await vi.waitUntil(() => lsn.openCount === 0, 10_000);
    expect(node.fds.node.used).toBe(1);
  });

  it('applies a lowered maxConnections live: open connections stay, new ones wait until enough have closed', async () => {
    const { metrics, port, node, l, lsn } = await setup(10, { maxConnectionsPerClient: 0 });
    const open = await Promise.all([1, 2].map(() => LineClient.connect(port)));
    cleanup.push(() => {
      for (const c of open) c.destroy();
    });
    for (const c of open) expect(await c.line()).toBe('b');
    await node.apply(snapshot(2, [{ ...l, maxConnections: 1 }]));
    expect(node.listeners.get(l.id)).toBe(lsn); // updated in place, not re-bound
    for (const [i, c] of open.entries()) expect(await c.echo(`kept ${i}`)).toBe(`kept ${i}`);
    expect((await attempt(port, '127.0.0.1')).outcome).toBe('refused');
    expect(await refused(metrics, 'listener_limit')).toBe(1);
    for (const c of open) c.destroy();
    await vi.waitUntil(() => lsn.openCount === 0, 10_000);
    const next = await attempt(port, '127.0.0.1');
    expect(next.outcome).toBe('served');
    next.socket.destroy();
  });

  it('refuses a client address beyond the per-client cap while another address is still served', async () => {
    const { server, metrics, port, lsn } = await setup(undefined, { maxConnectionsPerClient: 2 });
    const first = await Promise.all([1, 2].map(() => LineClient.connect(port, { localAddress: '127.0.0.2' })));
    cleanup.push(() => {
      for (const c of first) c.destroy();
    });
    for (const c of first) expect(await c.line()).toBe('b');
    const third = await attempt(port, '127.0.0.2');
    expect(third.outcome).toBe('refused');
    expect(await refused(metrics, 'client_limit')).toBe(1);
    expect(await refused(metrics, 'listener_limit')).toBe(0);
    const other = await attempt(port, '127.0.0.3');
    expect(other.outcome).toBe('served');
    other.socket.destroy();
    expect(server.connections()).toBe(3);
    // The client's count goes down as its connections end: the address is served again.
    first[0]!.destroy();
    await vi.waitUntil(() => lsn.clients?.of('127.0.0.2') === 1, 10_000);
    const again = await attempt(port, '127.0.0.2');
    expect(again.outcome).toBe('served');
    again.socket.destroy();
    // No per-client series in the metrics, however many addresses were seen.
    const text = await metrics.registry.metrics();
    expect(text).not.toMatch(/127\.0\.0\./);
  });

  it("counts a TCP listener's open connections as its conntrack entries (its sessions: no flow table beside them)", async () => {
    const { metrics, port, lsn } = await setup(undefined, { maxConnectionsPerClient: 0 });
    const entries = async () => {
      const text = await metrics.registry.getSingleMetricAsString('slb_l4_conntrack_entries');
      const m = new RegExp(`slb_l4_conntrack_entries\\{listener="${lsn.id}"\\} (\\d+)`).exec(text);
      return m ? Number(m[1]) : -1;
    };
    const open = await Promise.all([1, 2].map(() => LineClient.connect(port)));
    cleanup.push(() => {
      for (const c of open) c.destroy();
    });
    for (const c of open) expect(await c.line()).toBe('b');
    // Reported on the listener's one-second sweep.
    await vi.waitUntil(async () => (await entries()) === 2, { timeout: 5_000, interval: 100 });
    for (const c of open) c.destroy();
    await vi.waitUntil(async () => (await entries()) === 0, { timeout: 5_000, interval: 100 });
  });
});
