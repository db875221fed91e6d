import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { SMALL_READS_TO_SHRINK, uvError } from '@slb/node-runtime';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  connectRaw,
  RAW_MAX_BUFFER,
  RAW_MIN_BUFFER,
  RawServer,
  type RawSocket,
  type RawSocketEvents,
  spareBufferCount,
} from '../src/raw-tcp.js';

const hasPython = spawnSync('python3', ['-c', '']).status === 0;

/** TCP_NODELAY of a socket of this process, read by a child it is passed to (Node has no getsockopt). */
function tcpNoDelay(fd: number): number {
  const py =
    'import socket;s=socket.socket(fileno=3);print(s.getsockopt(socket.IPPROTO_TCP,socket.TCP_NODELAY));s.detach()';
  const out = spawnSync('python3', ['-c', py], { stdio: ['ignore', 'pipe', 'inherit', fd], encoding: 'utf8' });
  return Number(out.stdout.trim());
}

/** Byte-by-byte waits follow one another (one small read at a time), so a fine poll keeps the file fast. */
const POLL = { timeout: 3000, interval: 5 };

/** Records what a raw socket reports. */
class Recorder implements RawSocketEvents {
  readonly log: string[] = [];
  connectStatus: number | undefined;
  rawConnected(_s: RawSocket, status: number): void {
    this.connectStatus = status;
  }
  rawEnded(s: RawSocket): void {
    this.log.push(`ended:${this.name(s)}`);
  }
  rawFailed(s: RawSocket, errno: number): void {
    this.log.push(`failed:${this.name(s)}:${uvError(errno, 'io').code}`);
  }
  rawClosed(s: RawSocket): void {
    this.log.push(`closed:${this.name(s)}`);
  }
  names = new Map<RawSocket, string>();
  private name(s: RawSocket): string {
    return this.names.get(s) ?? '?';
  }
}

/**
 * client (net) → RawServer → accepted RawSocket ⇄ connectRaw RawSocket → sink (net server, half-open
 * allowed): the relay as the node runs it, with every piece around it a plain Node socket.
 */
async function relay(closers: (() => void)[]) {
  const accepted: RawSocket[] = [];
  const errors: Error[] = [];
  const server = new RawServer(
    (s) => accepted.push(s),
    (e) => errors.push(e),
  );
  server.listen('127.0.0.1', 0, 128);
  closers.push(() => server.close());
  const sinkServer = net.createServer({ allowHalfOpen: true });
  sinkServer.listen(0, '127.0.0.1');
  await once(sinkServer, 'listening');
  closers.push(() => sinkServer.close());
  const sinkSide = once(sinkServer, 'connection');

  const client = net.connect({ port: server.address().port, host: '127.0.0.1', allowHalfOpen: true });
  closers.push(() => client.destroy());
  await once(client, 'connect');
  await vi.waitUntil(() => accepted.length === 1, POLL);
  const down = accepted[0]!;
  const rec = new Recorder();
  down.events = rec;
  const up = connectRaw('127.0.0.1', (sinkServer.address() as net.AddressInfo).port, rec);
  rec.names.set(down, 'client').set(up, 'upstream');
  closers.push(
    () => down.close(),
    () => up.close(),
  );
  await vi.waitUntil(() => rec.connectStatus !== undefined, POLL);
  expect(rec.connectStatus).toBe(0);
  const [sink] = (await sinkSide) as [net.Socket];
  closers.push(() => sink.destroy());
  const received = { sink: [] as Buffer[], client: [] as Buffer[] };
  sink.on('data', (d: Buffer) => received.sink.push(d));
  client.on('data', (d: Buffer) => received.client.push(d));
  const bytes = (k: 'sink' | 'client') => received[k].reduce((n, b) => n + b.length, 0);
  return { server, client, down, up, sink, rec, received, bytes, errors };
}

describe('raw TCP handles (real sockets)', () => {
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const c of closers.splice(0).reverse()) c();
  });

  it('does not read an accepted socket until it relays, then carries both ways and counts bytes', async () => {
    const r = await relay(closers);
    r.client.write('early bytes');
    await new Promise((res) => setTimeout(res, 50)); // a fixed window on purpose: nothing is read in it
    expect(r.down.bytesRead).toBe(0);
    expect(r.down.remoteAddress()).toEqual({ address: '127.0.0.1', family: 'IPv4', port: r.client.localPort });
    expect(r.down.localAddress()?.port).toBe(r.server.address().port);

    r.up.write(Buffer.from('HDR '));
    r.down.relayTo(r.up);
    r.up.relayTo(r.down);
    await vi.waitUntil(() => r.bytes('sink') === 15, POLL);
    expect(Buffer.concat(r.received.sink).toString()).toBe('HDR early bytes');
    r.sink.write('answer');
    await vi.waitUntil(() => r.bytes('client') === 6, POLL);
    expect(Buffer.concat(r.received.client).toString()).toBe('answer');
    expect([r.down.bytesRead, r.down.bytesWritten, r.up.bytesRead, r.up.bytesWritten]).toEqual([11, 6, 6, 15]);
    expect(r.rec.log).toEqual([]);
  });

  it('passes each FIN on after the bytes before it, and closes each side once both ways are done', async () => {
    const r = await relay(closers);
    r.down.relayTo(r.up);
    r.up.relayTo(r.down);
    r.client.end('question');
    await once(r.sink, 'end');
    expect(Buffer.concat(r.received.sink).toString()).toBe('question');
    expect(r.rec.log).toEqual(['ended:client']);
    // Half-closed: the answer still flows back.
    r.sink.end('answer');
    await once(r.client, 'end');
    expect(Buffer.concat(r.received.client).toString()).toBe('answer');
    await vi.waitUntil(() => r.rec.log.length === 4, POLL);
    expect(r.rec.log.slice(1).sort()).toEqual(['closed:client', 'closed:upstream', 'ended:upstream']);
    expect([r.down.readEnded, r.down.writeEnded, r.up.readEnded, r.up.writeEnded]).toEqual([true, true, true, true]);
  });

  it('closes with the last FIN without losing what the kernel still holds toward a slow reader', async () => {
    const r = await relay(closers);
    r.down.relayTo(r.up);
    r.up.relayTo(r.down);
    r.client.pause(); // the answer piles up in the kernel's buffers until the client reads
    r.client.end('question');
    await once(r.sink, 'end');
    const answer = Buffer.alloc(512 * 1024, 9);
    r.sink.end(answer);
    // Relayed whole (no write of it pending) and closed: the rest of the answer is in the kernel's hands.
    await vi.waitUntil(() => r.up.readEnded, POLL);
    expect(r.down.closed).toBe(true);
    r.client.resume();
    await once(r.client, 'end');
    expect(r.bytes('client')).toBe(answer.length);
    expect(r.received.client.every((b) => b.every((x) => x === 9))).toBe(true);
    await vi.waitUntil(() => r.down.closed && r.up.closed, POLL);
    expect([r.down.writeEnded, r.up.writeEnded]).toEqual([true, true]);
  });

  it('passes the FIN of a backend that ends first on, then closes once the client ends too', async () => {
    const r = await relay(closers);
    r.down.relayTo(r.up);
    r.up.relayTo(r.down);
    r.sink.end('bye');
    await once(r.client, 'end');
    expect(Buffer.concat(r.received.client).toString()).toBe('bye');
    expect(r.rec.log).toEqual(['ended:upstream']);
    r.client.end('late');
    await once(r.sink, 'end');
    expect(Buffer.concat(r.received.sink).toString()).toBe('late');
    await vi.waitUntil(() => r.rec.log.length === 4, POLL);
    expect(r.rec.log.slice(1).sort()).toEqual(['closed:client', 'closed:upstream', 'ended:client']);
  });

  it.skipIf(!hasPython)('has Nagle off on accepted and on upstream sockets', async () => {
    const r = await relay(closers);
    const fd = (s: RawSocket) => (s.handle as unknown as { fd: number }).fd;
    expect([tcpNoDelay(fd(r.down)), tcpNoDelay(fd(r.up))]).toEqual([1, 1]);
  });

  it('reports a reset as a failure and leaves the closing to the owner', async () => {
    const r = await relay(closers);
    r.down.relayTo(r.up);
    r.up.relayTo(r.down);
    r.sink.resetAndDestroy();
    await vi.waitUntil(() => r.rec.log.length > 0, POLL);
    expect(r.rec.log[0]).toBe('failed:upstream:ECONNRESET');
    expect(r.up.closed).toBe(false);
  });

  it('grows its read buffer for a bulk flow and gives it back after a run of small reads', async () => {
    const r = await relay(closers);
    expect(r.down.bufferSize).toBe(RAW_MIN_BUFFER);
    r.down.relayTo(r.up);
    r.up.relayTo(r.down);
    r.client.write(Buffer.alloc(1024 * 1024, 7));
    await vi.waitUntil(() => r.bytes('sink') === 1024 * 1024, POLL);
    expect(r.down.bufferSize).toBe(RAW_MAX_BUFFER);
    // The bulk's last reads may have been small ones (however the kernel cut the megabyte): one read above
    // the small size, on its own, starts the run of small reads below from nothing.
    const bulk = 1024 * 1024 + 8192;
    r.client.write(Buffer.alloc(8192, 7));
    await vi.waitUntil(() => r.bytes('sink') === bulk, POLL);
    // One small read at a time: each write waits until the sink has it.
    for (let i = 1; i <= SMALL_READS_TO_SHRINK; i++) {
      r.client.write('x');
      await vi.waitUntil(() => r.bytes('sink') === bulk + i, POLL);
      if (i < SMALL_READS_TO_SHRINK) expect(r.down.bufferSize).toBe(RAW_MAX_BUFFER);
    }
    expect(r.down.bufferSize).toBe(RAW_MIN_BUFFER);
    expect(r.received.sink.every((b) => b.every((x) => x === 7 || x === 120))).toBe(true);
  });

  it('hands the small read buffers of closed sockets to new ones', async () => {
    const r = await relay(closers);
    r.down.relayTo(r.up);
    r.up.relayTo(r.down);
    r.client.write('x');
    await vi.waitUntil(() => r.bytes('sink') === 1, POLL);
    const before = spareBufferCount();
    r.down.close();
    r.up.close();
    expect(spareBufferCount()).toBe(before + 2);
    const again = await relay(closers);
    expect(spareBufferCount()).toBe(before);
    // The reused buffers carry the new connection's bytes only.
    again.down.relayTo(again.up);
    again.up.relayTo(again.down);
    again.client.write('second');
    await vi.waitUntil(() => again.bytes('sink') === 6, POLL);
    expect(Buffer.concat(again.received.sink).toString()).toBe('second');
  });

  it('resets on request: the client sees ECONNRESET, not a clean close', async () => {
    const r = await relay(closers);
    const failed = once(r.client, 'error');
    r.down.reset();
    const [err] = (await failed) as [NodeJS.ErrnoException];
    expect(err.code).toBe('ECONNRESET');
    expect(r.rec.log).toEqual(['closed:client']);
  });

  it('reports a refused connect with its code, and a bad address without throwing', async () => {
    const free = net.createServer();
    free.listen(0, '127.0.0.1');
    await once(free, 'listening');
    const port = (free.address() as net.AddressInfo).port;
    free.close();
    const rec = new Recorder();
    const s = connectRaw('127.0.0.1', port, rec);
    closers.push(() => s.close());
    await vi.waitUntil(() => rec.connectStatus !== undefined, POLL);
    expect(uvError(rec.connectStatus!, 'connect').code).toBe('ECONNREFUSED');

    const bad = new Recorder();
    const b = connectRaw('not-an-ip', 80, bad);
    closers.push(() => b.close());
    expect(bad.connectStatus).toBeUndefined(); // reported on the next tick, like any connect outcome
    await vi.waitUntil(() => bad.connectStatus !== undefined, POLL);
    expect(bad.connectStatus).toBeLessThan(0);
  });

  it('throws the bind error of a taken port, and listens and connects on IPv6 loopback', async () => {
    const a = new RawServer(
      () => {},
      () => {},
    );
    a.listen('127.0.0.1', 0, 16);
    closers.push(() => a.close());
    const b = new RawServer(
      () => {},
      () => {},
    );
    expect(() => b.listen('127.0.0.1', a.address().port, 16)).toThrow(
      expect.objectContaining({ code: 'EADDRINUSE', syscall: 'listen' }),
    );
    const accepted: RawSocket[] = [];
    const v6 = new RawServer(
      (s) => accepted.push(s),
      () => {},
    );
    v6.listen('::1', 0, 16);
    closers.push(() => v6.close());
    expect(v6.address()).toMatchObject({ address: '::1', family: 'IPv6' });
    const rec = new Recorder();
    const s = connectRaw('::1', v6.address().port, rec);
    closers.push(() => s.close());
    await vi.waitUntil(() => rec.connectStatus !== undefined && accepted.length === 1, POLL);
    expect(rec.connectStatus).toBe(0);
    closers.push(() => accepted[0]!.close());
    expect(accepted[0]!.remoteAddress()).toMatchObject({ address: '::1', family: 'IPv6' });
  });
});
