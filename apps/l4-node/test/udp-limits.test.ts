import dgram from 'node:dgram';
import { once } from 'node:events';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { L4Node, type L4NodeOptions } from '../src/app.js';
import { L4Metrics } from '../src/metrics.js';
import type { UdpListener } from '../src/udp-listener.js';
import { backend, freePort, listener, rid, snapshot } from './helpers.js';

/**
 * A UDP backend that records the source of every datagram (each flow has its own upstream socket, so one
 * source port per flow the node opened) and answers unless `silent`.
 */
async function udpBackend(silent = false) {
  const sources = new Set<number>();
  const s = dgram.createSocket('udp4');
  s.on('message', (msg, r) => {
    sources.add(r.port);
    if (!silent) s.send(`ok:${msg}`, r.port, r.address);
  });
  s.bind(0, '127.0.0.1');
  await once(s, 'listening');
  return { port: s.address().port, sources, close: () => new Promise<void>((r) => s.close(() => r())) };
}

async function udpClient(localAddress: string) {
  const s = dgram.createSocket('udp4');
  s.bind(0, localAddress);
  await once(s, 'listening');
  return {
    /** The reply, or undefined when none came within `timeoutMs`. */
    ask(port: number, text: string, timeoutMs = 2000): Promise<string | undefined> {
      const reply = new Promise<string | undefined>((resolve) => {
        const onMessage = (m: Buffer) => {
          clearTimeout(t);
          resolve(m.toString());
        };
        const t = setTimeout(() => {
          s.off('message', onMessage);
          resolve(undefined);
        }, timeoutMs);
        s.once('message', onMessage);
      });
      s.send(text, port, '127.0.0.1');
      return reply;
    },
    send: (port: number, text: string) => s.send(text, port, '127.0.0.1'),
    close: () => s.close(),
  };
}

async function refused(metrics: L4Metrics, reason: string): Promise<number> {
  const text = await metrics.registry.getSingleMetricAsString('slb_l4_refused_total');
  const m = new RegExp(`slb_l4_refused_total\\{[^}]*reason="${reason}"[^}]*\\} (\\d+)`).exec(text);
  return m ? Number(m[1]) : 0;
}

describe('UDP flow limits', () => {
  const cleanup: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  async function setup(
    opts: { maxConnections?: number; idleTimeout?: number; silent?: boolean },
    limits: L4NodeOptions['limits'],
  ) {
    const server = await udpBackend(opts.silent);
    const metrics = new L4Metrics({ defaultMetrics: false });
    const node = new L4Node({ logger: pino({ level: 'silent' }), metrics, limits });
    const port = await freePort();
    const l = listener(1, port, {
      protocol: 'udp',
      maxConnections: opts.maxConnections,
      idleTimeout: opts.idleTimeout ?? 60,
      backends: [backend(1, server.port)],
    });
    await node.apply(snapshot(1, [l]));
    cleanup.push(
      () => server.close(),
      () => node.close(),
    );
    return { server, metrics, port, lsn: node.listeners.get(l.id) as UdpListener };
  }

  it('creates no backend socket for flows beyond the listener cap', async () => {
    const { server, metrics, port, lsn } = await setup({ maxConnections: 3 }, { maxConnectionsPerClient: 0 });
    const clients = await Promise.all(Array.from({ length: 8 }, () => udpClient('127.0.0.1')));
    cleanup.push(() => {
      for (const c of clients) c.close();
    });
    const replies = [];
    for (const [i, c] of clients.entries()) replies.push(await c.ask(port, `n${i}`, i < 3 ? 2000 : 300));
    expect(replies.slice(0, 3)).toEqual(['ok:n0', 'ok:n1', 'ok:n2']);
    expect(replies.slice(3)).toEqual([undefined, undefined, undefined, undefined, undefined]);
    expect(server.sources.size).toBe(3);
    expect(lsn.openCount).toBe(3);
    expect(await refused(metrics, 'listener_limit')).toBe(5);
  });

  it('refuses a new flow from a client address at its cap while another address still gets one', async () => {
    const { server, metrics, port } = await setup({}, { maxConnectionsPerClient: 2 });
    const mine = await Promise.all([1, 2, 3].map(() => udpClient('127.0.0.2')));
    const other = await udpClient('127.0.0.3');
    cleanup.push(() => {
      for (const c of [...mine, other]) c.close();
    });
    expect(await mine[0]!.ask(port, 'a')).toBe('ok:a');
    expect(await mine[1]!.ask(port, 'b')).toBe('ok:b');
    expect(await mine[2]!.ask(port, 'c', 300)).toBeUndefined();
    expect(await other.ask(port, 'd')).toBe('ok:d');
    expect(server.sources.size).toBe(3);
    expect(await refused(metrics, 'client_limit')).toBe(1);
    // The flows at the cap keep working.
    expect(await mine[0]!.ask(port, 'e')).toBe('ok:e');
  });

  it('counts flows against the node descriptor budget: beyond it none is made, and an ended flow gives its back', async () => {
    // The listening socket takes one of the four, each flow one.
    const limits = { maxConnectionsPerClient: 0, maxOpenFiles: 4, tenantShare: 1, udpUnrepliedTimeoutMs: 1000 };
    const { server, metrics, port, lsn } = await setup({ idleTimeout: 1 }, limits);
    const clients = await Promise.all(Array.from({ length: 5 }, () => udpClient('127.0.0.1')));
    cleanup.push(() => {
      for (const c of clients) c.close();
    });
    const replies = [];
    for (const [i, c] of clients.entries()) replies.push(await c.ask(port, `n${i}`, i < 3 ? 2000 : 300));
    expect(replies).toEqual(['ok:n0', 'ok:n1', 'ok:n2', undefined, undefined]);
    expect(server.sources.size).toBe(3);
    expect(await refused(metrics, 'node_limit')).toBe(2);
    // idleTimeout 1 s: the flows end, their descriptors come back, a new client gets a flow.
    await vi.waitUntil(() => lsn.openCount === 0, 6000);
    expect(await clients[4]!.ask(port, 'later')).toBe('ok:later');
  });

  it("holds one tenant to its share of the node's descriptors: another tenant's listener is still served", async () => {
    const server = await udpBackend();
    const metrics = new L4Metrics({ defaultMetrics: false });
    // Ten descriptors, five per tenant: a listening socket and four flows each.
    const limits = { maxConnectionsPerClient: 0, maxOpenFiles: 10, tenantShare: 0.5 };
    const node = new L4Node({ logger: pino({ level: 'silent' }), metrics, limits });
    cleanup.push(
      () => server.close(),
      () => node.close(),
    );
    const [portA, portB] = [await freePort(), await freePort()];
    const udp = { protocol: 'udp' as const, backends: [backend(1, server.port)] };
    await node.apply(
      snapshot(1, [
        listener(1, portA, { ...udp, tenantId: rid('tnt', 1) }),
        listener(2, portB, { ...udp, tenantId: rid('tnt', 2) }),
      ]),
    );
    const clients = await Promise.all(Array.from({ length: 8 }, () => udpClient('127.0.0.1')));
    cleanup.push(() => {
      for (const c of clients) c.close();
    });
    // Tenant 1's listener is flooded by eight clients: four get flows.
    const a = [];
    for (const [i, c] of clients.entries()) a.push(await c.ask(portA, `a${i}`, i < 4 ? 2000 : 300));
    expect(a.filter((r) => r !== undefined)).toHaveLength(4);
    expect(await refused(metrics, 'tenant_limit')).toBe(4);
    // Tenant 2's listener still serves its clients.
    for (const [i, c] of clients.slice(0, 4).entries()) expect(await c.ask(portB, `b${i}`)).toBe(`ok:b${i}`);
    expect(await refused(metrics, 'node_limit')).toBe(0);
  });

  it('at its cap, reclaims flows that expired since the last sweep before refusing a new one', async () => {
    const server = await udpBackend();
    const metrics = new L4Metrics({ defaultMetrics: false });
    let clock = Date.now();
    const node = new L4Node({
      logger: pino({ level: 'silent' }),
      metrics,
      now: () => clock,
      limits: { maxConnectionsPerClient: 0 },
    });
    cleanup.push(
      () => server.close(),
      () => node.close(),
    );
    const port = await freePort();
    const l = listener(1, port, {
      protocol: 'udp',
      idleTimeout: 1,
      maxConnections: 2,
      backends: [backend(1, server.port)],
    });
    await node.apply(snapshot(1, [l]));
    const clients = await Promise.all([1, 2, 3].map(() => udpClient('127.0.0.1')));
    cleanup.push(() => {
      for (const c of clients) c.close();
    });
    expect(await clients[0]!.ask(port, 'a')).toBe('ok:a');
    expect(await clients[1]!.ask(port, 'b')).toBe('ok:b');
    // Both flows idle past their timeout on the node's clock; no periodic sweep has seen that yet.
    clock += 2_000;
    expect(await clients[2]!.ask(port, 'c')).toBe('ok:c');
    expect(await refused(metrics, 'listener_limit')).toBe(0);
  });

  it('reaps a flow whose backend never answered after the short timeout; an answered one lives for idleTimeout', async () => {
    const limits = { maxConnectionsPerClient: 0, udpUnrepliedTimeoutMs: 1000 };
    const silent = await setup({ idleTimeout: 30, silent: true }, limits);
    const answering = await setup({ idleTimeout: 30 }, limits);
    const c = await udpClient('127.0.0.1');
    cleanup.push(() => c.close());
    expect(await c.ask(silent.port, 'anyone?', 200)).toBeUndefined();
    expect(await c.ask(answering.port, 'hello')).toBe('ok:hello');
    await vi.waitUntil(() => silent.server.sources.size === 1, 5000);
    expect(silent.lsn.openCount).toBe(1);
    const start = Date.now();
    // Swept every second: gone within about two, far below the 30 s idleTimeout.
    await vi.waitUntil(() => silent.lsn.openCount === 0, 6000);
    expect(Date.now() - start).toBeLessThan(6000);
    // The answered flow, idle as long, is still there: a fixed wait on purpose, since it asserts a flow is NOT swept.
    await new Promise((r) => setTimeout(r, 1500));
    expect(answering.lsn.openCount).toBe(1);
    expect(await c.ask(answering.port, 'again')).toBe('ok:again');
    expect(answering.server.sources.size).toBe(1); // the same flow, the same upstream socket
  });
});
