import { once } from 'node:events';
import net from 'node:net';
import { SMALL_READS_TO_SHRINK } from '@slb/node-runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { acceptWithRelays, RELAY_MAX_BUFFER, RELAY_MIN_BUFFER, type ReadRelay } from '../src/read-relay.js';

/** A listening server whose sockets come from acceptWithRelays, and a sink the relays write into. */
async function relayServer() {
  const accepted: { socket: net.Socket; relay: ReadRelay }[] = [];
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  acceptWithRelays(server, (socket, relay) => accepted.push({ socket, relay }));
  const port = (server.address() as net.AddressInfo).port;
  const sinkServer = net.createServer({ allowHalfOpen: true });
  sinkServer.listen(0, '127.0.0.1');
  await once(sinkServer, 'listening');
  return { server, port, accepted, sinkServer, sinkPort: (sinkServer.address() as net.AddressInfo).port };
}

async function until(check: () => boolean, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('acceptWithRelays and ReadRelay (real sockets)', () => {
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const c of closers.splice(0)) c();
  });

  it('hands out paused sockets, counted by the server, that relay into the peer once connected', async () => {
    const s = await relayServer();
    closers.push(() => s.sinkServer.close());
    const client = net.connect(s.port, '127.0.0.1');
    await once(client, 'connect');
    client.write('early bytes');
    await until(() => s.accepted.length === 1);
    const { socket, relay } = s.accepted[0]!;
    // Paused at accept: the early bytes wait in the kernel until a peer is there.
    await new Promise((r) => setTimeout(r, 50));
    expect(socket.bytesRead).toBe(0);
    const count = await new Promise<number>((resolve, reject) =>
      s.server.getConnections((err, n) => (err ? reject(err) : resolve(n))),
    );
    expect(count).toBe(1);

    const sinkSide = once(s.sinkServer, 'connection');
    const up = net.connect(s.sinkPort, '127.0.0.1');
    await once(up, 'connect');
    const [sink] = (await sinkSide) as [net.Socket];
    let got = '';
    sink.setEncoding('utf8');
    sink.on('data', (d: string) => {
      got += d;
    });
    relay.connect(socket, up);
    socket.resume();
    client.end(' and the rest');
    // The client's FIN reaches the sink as a FIN.
    await once(sink, 'end');
    expect(got).toBe('early bytes and the rest');
    sink.destroy();
    up.destroy();
    client.destroy();
    socket.destroy();
    // Counted in and out like a socket net.Server built itself: close() completes.
    await new Promise<void>((resolve) => s.server.close(() => resolve()));
  });

  it('grows its buffer for a bulk flow and gives it back after a run of small reads', async () => {
    const s = await relayServer();
    closers.push(
      () => s.sinkServer.close(),
      () => s.server.close(),
    );
    const client = net.connect(s.port, '127.0.0.1');
    closers.push(() => client.destroy());
    await once(client, 'connect');
    await until(() => s.accepted.length === 1);
    const { socket, relay } = s.accepted[0]!;
    closers.push(() => socket.destroy());
    const up = net.connect(s.sinkPort, '127.0.0.1');
    closers.push(() => up.destroy());
    await once(up, 'connect');
    relay.connect(socket, up);
    expect(relay.bufferSize).toBe(RELAY_MIN_BUFFER);
    // Reads are driven directly here, as Node drives them: the callback, then the buffer for the next read.
    const read = (n: number): number => {
      const buf = relay.onread.buffer();
      buf.fill(1, 0, n);
      relay.onread.callback(n, buf);
      return relay.onread.buffer().length;
    };
    expect(read(100)).toBe(RELAY_MIN_BUFFER);
    expect(read(RELAY_MIN_BUFFER)).toBe(RELAY_MAX_BUFFER);
    expect(read(RELAY_MAX_BUFFER)).toBe(RELAY_MAX_BUFFER);
    expect(read(20_000)).toBe(RELAY_MAX_BUFFER);
    for (let i = 1; i < SMALL_READS_TO_SHRINK; i++) expect(read(200)).toBe(RELAY_MAX_BUFFER);
    expect(read(200)).toBe(RELAY_MIN_BUFFER);
  });
});
