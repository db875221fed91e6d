import dgram from 'node:dgram';
import { once } from 'node:events';
import net from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { L4Node } from '../src/app.js';
import { L4Metrics } from '../src/metrics.js';
import { backend, freePort, listener, snapshot } from './helpers.js';

// Listeners bind the LB's VIP, which every node hosting the LB shares: upstream connections must leave
// from the node's own address (FULLNAT), so replies come back to this node, while PROXY headers still name
// the VIP:port the client reached.

const VIP = '127.1.0.9';
const NODE = '127.0.0.11';
const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

function node(sourceAddress: string | undefined): L4Node {
  const n = new L4Node({
    logger: pino({ level: 'silent' }),
    metrics: new L4Metrics({ defaultMetrics: false }),
    sourceAddress,
  });
  cleanup.push(() => n.close());
  return n;
}

/** A TCP backend that answers each connection with the peer address it saw, and keeps what it reads. */
async function peerServer() {
  const received: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  const s = net.createServer((c) => {
    sockets.add(c);
    c.on('close', () => sockets.delete(c));
    c.on('data', (d) => received.push(d));
    c.on('error', () => {});
    c.write(`${c.remoteAddress}\n`);
  });
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  cleanup.push(() => {
    for (const c of sockets) c.destroy();
    return new Promise<void>((r) => s.close(() => r()));
  });
  return { port: (s.address() as net.AddressInfo).port, received };
}

/** Connects from `localAddress`, returns the first line the backend sent and the client's port. */
async function firstLine(host: string, port: number, write = ''): Promise<{ line: string; clientPort: number }> {
  const c = net.connect({ host, port, localAddress: '127.0.0.1' });
  try {
    await once(c, 'connect');
    const clientPort = c.localPort!;
    if (write !== '') c.write(write);
    const line = await new Promise<string>((resolve, reject) => {
      let buf = '';
      const t = setTimeout(() => reject(new Error('no line')), 3000);
      c.on('data', (d) => {
        buf += d.toString();
        if (buf.includes('\n')) {
          clearTimeout(t);
          resolve(buf.slice(0, buf.indexOf('\n')));
        }
      });
      c.once('error', reject);
    });
    return { line, clientPort };
  } finally {
    c.destroy();
  }
}

describe('upstream connections leave from the node address, not the VIP', () => {
  it('TCP: the backend sees the node address; the PROXY header names the client and the VIP:port', async () => {
    const be = await peerServer();
    const port = await freePort(VIP);
    const n = node(NODE);
    const lsn = listener(1, port, { bindAddresses: [VIP], proxyProtocol: 'v1', backends: [backend(1, be.port)] });
    expect(await n.apply(snapshot(1, [lsn]))).toEqual([]);
    const { line, clientPort } = await firstLine(VIP, port);
    expect(line).toBe(NODE);
    const deadline = Date.now() + 3000;
    while (be.received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(Buffer.concat(be.received).toString('latin1')).toBe(`PROXY TCP4 127.0.0.1 ${VIP} ${clientPort} ${port}\r\n`);
  });

  it('TCP: a wildcard node address lets the kernel choose', async () => {
    const be = await peerServer();
    const port = await freePort(VIP);
    const n = node('0.0.0.0');
    await n.apply(snapshot(1, [listener(1, port, { bindAddresses: [VIP], backends: [backend(1, be.port)] })]));
    expect((await firstLine(VIP, port)).line).toBe('127.0.0.1');
  });

  it('UDP: the flow socket is bound to the node address before it connects', async () => {
    const be = dgram.createSocket('udp4');
    be.on('message', (msg, r) => be.send(`${r.address}:${msg}`, r.port, r.address));
    be.bind(0, '127.0.0.1');
    await once(be, 'listening');
    cleanup.push(() => new Promise<void>((r) => be.close(() => r())));
    const port = await freePort(VIP);
    const n = node(NODE);
    const lsn = listener(1, port, {
      bindAddresses: [VIP],
      protocol: 'udp',
      backends: [backend(1, be.address().port)],
    });
    expect(await n.apply(snapshot(1, [lsn]))).toEqual([]);
    const client = dgram.createSocket('udp4');
    client.bind(0, '127.0.0.1');
    await once(client, 'listening');
    cleanup.push(() => new Promise<void>((r) => client.close(() => r())));
    const reply = new Promise<{ msg: string; from: string }>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no UDP reply')), 3000);
      client.once('message', (m, r) => {
        clearTimeout(t);
        resolve({ msg: m.toString(), from: `${r.address}:${r.port}` });
      });
    });
    client.send('hi', port, VIP);
    // The backend saw the node address; the client hears back from the VIP it sent to.
    expect(await reply).toEqual({ msg: `${NODE}:hi`, from: `${VIP}:${port}` });
  });
});
