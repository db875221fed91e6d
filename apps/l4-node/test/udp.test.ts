import dgram from 'node:dgram';
import { once } from 'node:events';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { L4Metrics } from '../src/metrics.js';
import { UdpListener } from '../src/udp-listener.js';
import { backend, freePort, listener, newNode, snapshot } from './helpers.js';

/** A UDP backend that answers `<name>:<payload>`. */
async function udpServer(name: string) {
  const s = dgram.createSocket('udp4');
  s.on('message', (msg, r) => s.send(`${name}:${msg}`, r.port, r.address));
  s.bind(0, '127.0.0.1');
  await once(s, 'listening');
  return { name, port: s.address().port, close: () => new Promise<void>((r) => s.close(() => r())) };
}

/** A client socket with a request/response helper. */
async function udpClient(localAddress = '127.0.0.1') {
  const s = dgram.createSocket('udp4');
  s.bind(0, localAddress);
  await once(s, 'listening');
  return {
    socket: s,
    async ask(port: number, text: string, timeoutMs = 2000): Promise<string> {
      const reply = new Promise<string>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no UDP reply to ${text}`)), timeoutMs);
        s.once('message', (m) => {
          clearTimeout(t);
          resolve(m.toString());
        });
      });
      s.send(text, port, '127.0.0.1');
      return reply;
    },
    close: () => s.close(),
  };
}

describe('UDP forwarding (real sockets)', () => {
  const node = newNode();
  let servers: Awaited<ReturnType<typeof udpServer>>[];
  let port = 0;
  const base = () => listener(1, port, { protocol: 'udp', scheduler: 'tch', idleTimeout: 1 });

  beforeAll(async () => {
    servers = await Promise.all(['a', 'b', 'c'].map((n) => udpServer(n)));
    port = await freePort();
    await node.apply(snapshot(1, [{ ...base(), backends: [backend(1, servers[0]!.port)] }]));
  });

  afterAll(async () => {
    await node.close();
    await Promise.all(servers.map((s) => s.close()));
  });

  it('keeps a flow on its backend after the backend set changes (conntrack), new flows use the new set', async () => {
    const c = await udpClient();
    expect(await c.ask(port, 'one')).toBe('a:one');
    await node.apply(snapshot(2, [{ ...base(), backends: servers.map((s, i) => backend(i + 1, s.port)) }]));
    for (let i = 0; i < 5; i++) expect(await c.ask(port, `again${i}`)).toBe(`a:again${i}`);
    // Fresh flows are hashed over a, b and c.
    const seen = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const other = await udpClient();
      seen.add((await other.ask(port, 'x')).split(':')[0]!);
      other.close();
    }
    expect(seen.size).toBeGreaterThan(1);
    c.close();
  });

  it('returns replies to the right client, and forgets a flow after the idle timeout', async () => {
    const clients = await Promise.all([udpClient('127.0.0.7'), udpClient('127.0.0.8')]);
    const replies = await Promise.all(clients.map((c, i) => c.ask(port, `from-${i}`)));
    expect(replies.map((r) => r.split(':')[1])).toEqual(['from-0', 'from-1']);
    const l = node.listeners.get(base().id) as UdpListener;
    expect(l.conntrack.size).toBeGreaterThan(0);
    for (const c of clients) c.close();
    await vi.waitUntil(() => l.conntrack.size === 0, 4000); // idleTimeout 1 s, swept every second
  });
});

describe('UDP flow bound', () => {
  it('never holds more flows than its maxConnections; a new flow beyond it is refused, live ones stay', async () => {
    const server = await udpServer('z');
    const port = await freePort();
    const metrics = new L4Metrics({ defaultMetrics: false });
    const l = listener(9, port, { protocol: 'udp', maxConnections: 4, backends: [backend(1, server.port)] });
    const udp = new UdpListener(
      {
        config: l,
        backends: [{ serverId: 'srv-1', address: '127.0.0.1', port: server.port, weight: 1, healthy: true }],
        proxyProtocol: 'off',
        acl: undefined,
      },
      { logger: pino({ level: 'silent' }), metrics, now: Date.now },
    );
    await udp.start();
    const clients = await Promise.all(Array.from({ length: 10 }, () => udpClient()));
    for (const [i, c] of clients.entries()) {
      if (i < 4) expect(await c.ask(port, `n${i}`)).toBe(`z:n${i}`);
      else await expect(c.ask(port, `n${i}`, 300)).rejects.toThrow(/no UDP reply/);
      expect(udp.conntrack.size).toBeLessThanOrEqual(4);
    }
    expect(udp.conntrack.evicted).toBe(0);
    // The first flows were not pushed out by the later ones.
    for (const [i, c] of clients.slice(0, 4).entries()) expect(await c.ask(port, `m${i}`)).toBe(`z:m${i}`);
    const active = await metrics.registry.getSingleMetricAsString('slb_l4_connections_active');
    expect(active).toMatch(/\} 4$/m);
    for (const c of clients) c.close();
    udp.stop(0);
    await server.close();
  });
});

describe('UDP garbage', () => {
  it('forwards any datagram byte for byte (empty, 64 KiB, random, PROXY-like) and keeps serving', async () => {
    // A backend that keeps exactly what it was sent: the node must neither parse nor mangle payloads.
    const received: Buffer[] = [];
    const raw = dgram.createSocket('udp4');
    raw.on('message', (msg, r) => {
      received.push(Buffer.from(msg));
      raw.send('ok', r.port, r.address);
    });
    raw.bind(0, '127.0.0.1');
    await once(raw, 'listening');
    const node = newNode();
    const port = await freePort();
    await node.apply(snapshot(1, [listener(7, port, { protocol: 'udp', backends: [backend(1, raw.address().port)] })]));
    const signature = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
    const datagrams = [
      Buffer.alloc(0),
      Buffer.alloc(65_507, 0xab),
      Buffer.concat([signature, Buffer.from([0x21, 0x12, 0xff, 0xff])]),
      Buffer.from('PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n'),
      ...fc.sample(fc.uint8Array({ maxLength: 1500 }), { numRuns: 200, seed: 3 }).map((a) => Buffer.from(a)),
    ];
    const clients = await Promise.all(Array.from({ length: 20 }, () => udpClient()));
    // One datagram in flight per client at a time: a burst could overflow the backend's receive buffer,
    // and UDP loss there would say nothing about the node.
    await Promise.all(
      clients.map(async (c, k) => {
        for (let i = k; i < datagrams.length; i += clients.length) {
          const answered = once(c.socket, 'message');
          c.socket.send(datagrams[i]!, port, '127.0.0.1');
          await answered;
        }
      }),
    );
    const hex = (list: Buffer[]) => list.map((b) => b.toString('hex')).sort();
    expect(hex(received)).toEqual(hex(datagrams));
    const fresh = await udpClient();
    await fresh.ask(port, 'still there');
    for (const c of [...clients, fresh]) c.close();
    await node.close();
    await new Promise<void>((r) => raw.close(() => r()));
  });
});
