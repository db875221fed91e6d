import dgram from 'node:dgram';
import { once } from 'node:events';
import net from 'node:net';
import { probeReusePort } from '@slb/node-runtime';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { L4Node } from '../src/app.js';
import { L4Metrics } from '../src/metrics.js';
import { backend, carrier, freePort, listener, pool, snapshot } from './helpers.js';

// Every L4 node hosting an LB binds its VIP:port at once (active-active); on one host they share it with
// SO_REUSEPORT and the kernel spreads connections and flows between them. Each node connects upstream from
// its own address, so the backend's view of the peer tells which node carried a connection.

const VIP = '127.1.9.9';
const NODE_A = '127.0.0.11';
const NODE_B = '127.0.0.12';
/** Node.js ≥ 22.12 on Linux: the same probe the node runs at start. */
const canShare = await probeReusePort(VIP);
const CLIENTS = 200;

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

function node(sourceAddress: string, reusePort?: boolean): L4Node {
  const n = new L4Node({
    logger: pino({ level: 'silent' }),
    metrics: new L4Metrics({ defaultMetrics: false }),
    sourceAddress,
    reusePort,
  });
  cleanup.push(() => n.close());
  return n;
}

/** A TCP backend that answers each connection with the peer address it saw (the node that carried it). */
async function peerServer(): Promise<number> {
  const sockets = new Set<net.Socket>();
  const s = net.createServer((c) => {
    sockets.add(c);
    c.on('close', () => sockets.delete(c));
    c.on('error', () => {});
    c.end(`${c.remoteAddress}\n`);
  });
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  cleanup.push(() => {
    for (const c of sockets) c.destroy();
    return new Promise<void>((r) => s.close(() => r()));
  });
  return (s.address() as net.AddressInfo).port;
}

function tally(names: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const n of names) out[n] = (out[n] ?? 0) + 1;
  return out;
}

describe('two nodes share a VIP:port (SO_REUSEPORT)', () => {
  it.skipIf(!canShare)(
    'TCP: both nodes get connections from a burst, and the survivor takes every new one after the other stops (skipped where the runtime cannot share an address:port: Node.js < 22.12)',
    async () => {
      const bePort = await peerServer();
      const port = await freePort(VIP);
      const lsn = listener(1, port, { bindAddresses: [VIP], reusePort: true, backends: [backend(1, bePort)] });
      const a = node(NODE_A);
      const b = node(NODE_B);
      expect(await a.apply(snapshot(1, [lsn]))).toEqual([]);
      expect(await b.apply(snapshot(1, [lsn]))).toEqual([]);

      const burst = tally(await pool(Array.from({ length: CLIENTS }), 32, () => carrier(VIP, port)));
      expect(Object.keys(burst).sort()).toEqual([NODE_A, NODE_B]);
      // The kernel hashes each connection's addresses: roughly half each, far from all on one node.
      expect(burst[NODE_A]!).toBeGreaterThan(CLIENTS / 10);
      expect(burst[NODE_B]!).toBeGreaterThan(CLIENTS / 10);

      await a.close();
      const after = tally(await pool(Array.from({ length: CLIENTS }), 32, () => carrier(VIP, port)));
      expect(after).toEqual({ [NODE_B]: CLIENTS });
    },
  );

  it.skipIf(!canShare)('UDP: flows are spread over both nodes (skipped below Node.js 22.12, as above)', async () => {
    const be = dgram.createSocket('udp4');
    be.on('message', (_msg, r) => be.send(r.address, r.port, r.address));
    be.bind(0, '127.0.0.1');
    await once(be, 'listening');
    cleanup.push(() => new Promise<void>((r) => be.close(() => r())));
    const port = await freePort(VIP);
    const lsn = listener(1, port, {
      protocol: 'udp',
      bindAddresses: [VIP],
      reusePort: true,
      backends: [backend(1, be.address().port)],
    });
    const a = node(NODE_A);
    const b = node(NODE_B);
    expect(await a.apply(snapshot(1, [lsn]))).toEqual([]);
    expect(await b.apply(snapshot(1, [lsn]))).toEqual([]);
    const ask = async (): Promise<string> => {
      const c = dgram.createSocket('udp4');
      c.bind(0, '127.0.0.1');
      await once(c, 'listening');
      try {
        const reply = new Promise<string>((resolve, reject) => {
          const t = setTimeout(() => reject(new Error('no UDP reply')), 3000);
          c.once('message', (m) => {
            clearTimeout(t);
            resolve(m.toString());
          });
        });
        c.send('who', port, VIP);
        return await reply;
      } finally {
        c.close();
      }
    };
    const flows = tally(await pool(Array.from({ length: 64 }), 16, ask));
    expect(Object.keys(flows).sort()).toEqual([NODE_A, NODE_B]);
  });

  it('without reusePort the second node cannot bind the VIP:port, and reports it', async () => {
    const bePort = await peerServer();
    const port = await freePort(VIP);
    const exclusive = listener(1, port, { bindAddresses: [VIP], backends: [backend(1, bePort)] });
    const a = node(NODE_A);
    const b = node(NODE_B);
    expect(await a.apply(snapshot(1, [exclusive]))).toEqual([]);
    const reason = `cannot bind tcp ${VIP}:${port}: EADDRINUSE`;
    expect(await b.apply(snapshot(1, [exclusive]))).toEqual([{ listenerId: exclusive.id, reason }]);
    expect(b.currentFailures()).toEqual([{ listenerId: exclusive.id, reason }]);
    expect(await carrier(VIP, port)).toBe(NODE_A);
  });

  it('a listener asking for reusePort on a runtime without it binds exclusively (the second node fails)', async () => {
    const port = await freePort(VIP);
    const shared = listener(1, port, { bindAddresses: [VIP], reusePort: true });
    const a = node(NODE_A, false);
    const b = node(NODE_B, false);
    expect(await a.apply(snapshot(1, [shared]))).toEqual([]);
    expect(await b.apply(snapshot(1, [shared]))).toEqual([
      { listenerId: shared.id, reason: `cannot bind tcp ${VIP}:${port}: EADDRINUSE` },
    ]);
  });
});
