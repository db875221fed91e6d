import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HandleIo, type HandleIoEvents } from '../src/handle-io.js';

// The fast path's reads and writes on a socket's handle, on real loopback sockets: what net.Socket would
// have done (order, backpressure, EOF, byte counts) must still hold with its stream machinery bypassed.

let server: Server | undefined;
afterEach(() => {
  server?.close();
  server = undefined;
});

/** A connected pair: `accepted` is the server side (the node's client socket), `peer` the other end. */
async function pair(): Promise<{ accepted: Socket; peer: Socket }> {
  const accepted = new Promise<Socket>((resolve) => {
    server = createServer(resolve);
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const peer = connect((server!.address() as AddressInfo).port, '127.0.0.1');
  peer.on('error', () => {});
  const s = await accepted;
  s.on('error', () => {});
  return { accepted: s, peer };
}

class Recorder implements HandleIoEvents {
  read: Buffer[] = [];
  written = 0;
  onBytes(chunk: Buffer): void {
    this.read.push(chunk);
  }
  onWritten(): void {
    this.written++;
  }
  text(): string {
    return Buffer.concat(this.read).toString('latin1');
  }
}

const until = async (cond: () => boolean, what: string) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
};

function collect(s: Socket): { text: () => string; ended: Promise<void> } {
  const chunks: Buffer[] = [];
  s.on('data', (d: Buffer) => chunks.push(d));
  const ended = new Promise<void>((r) => s.once('end', () => r()));
  return { text: () => Buffer.concat(chunks).toString('latin1'), ended };
}

describe('HandleIo', () => {
  it('writes in order with what the socket itself writes after, waits for a slow reader and says when done', async () => {
    const { accepted, peer } = await pair();
    peer.pause();
    const ev = new Recorder();
    const io = new HandleIo(accepted, ev);
    const chunk = Buffer.alloc(1024 * 1024, 'a');
    let sent = 0;
    // Until the kernel's buffers are full and a write has to wait (bounded: loopback holds a few MiB).
    for (let i = 0; i < 64 && io.write(chunk); i++) sent += chunk.length;
    sent += chunk.length;
    expect(io.pending).toBeGreaterThan(0);
    expect(io.write('-head-')).toBe(false);
    expect(io.writev(Buffer.from('[one]'), Buffer.from('[two]'))).toBe(false);
    // The socket's own end(), as a refused request or a hand-over's answer would: after the bytes above.
    accepted.end('tail');
    const got = collect(peer);
    peer.resume();
    await got.ended;
    const text = got.text();
    expect(text.length).toBe(sent + '-head-[one][two]tail'.length);
    expect(text.endsWith('a-head-[one][two]tail')).toBe(true);
    await until(() => io.pending === 0 && ev.written > 0, 'the writes to complete');
    expect(ev.written).toBe(1);
    expect(accepted.bytesWritten).toBe(text.length);
  });

  it('takes the bytes the socket had buffered, then reads itself, pauses, resumes and gives reading back', async () => {
    const { accepted, peer } = await pair();
    // As readProxyHeader leaves a socket: part of what arrived read, the rest in the socket's buffer.
    peer.write('HDRrest-of-first');
    await new Promise<void>((resolve) => {
      const onReadable = () => {
        if (accepted.readableLength < 'HDRrest-of-first'.length) return;
        expect(accepted.read(3)?.toString()).toBe('HDR');
        accepted.removeListener('readable', onReadable);
        resolve();
      };
      accepted.on('readable', onReadable);
    });
    const ev = new Recorder();
    const io = new HandleIo(accepted, ev);
    expect(io.takeReads()?.toString()).toBe('rest-of-first');

    peer.write('second');
    await until(() => ev.text() === 'second', 'the second write');

    io.pauseReads();
    peer.write('third');
    await new Promise((r) => setTimeout(r, 100));
    expect(ev.text()).toBe('second');
    io.resumeReads();
    await until(() => ev.text() === 'secondthird', 'the third write after resuming');

    io.pauseReads();
    io.releaseReads();
    const back = collect(accepted);
    peer.end('fourth');
    await back.ended;
    expect(back.text()).toBe('fourth');
    expect(ev.text()).toBe('secondthird');
    expect(accepted.bytesRead).toBe('HDRrest-of-firstsecondthirdfourth'.length);
  });

  it("reads a socket made with net's onread option into the buffer each read returns; pause, EOF and counts stay net's", async () => {
    const accepted = new Promise<Socket>((resolve) => {
      server = createServer(resolve);
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const first = Buffer.alloc(64);
    const viaNet: string[] = [];
    // net.js's own callback for this option: it must not be called once the HandleIo reads.
    const s = connect({
      port: (server!.address() as AddressInfo).port,
      host: '127.0.0.1',
      onread: {
        buffer: first,
        callback: (n, buf) => viaNet.push(Buffer.from(buf.subarray(0, n)).toString('latin1')) > 0,
      },
    });
    s.on('error', () => {});
    const io = new HandleIo(s, new Recorder());
    const buffers = [Buffer.alloc(64), Buffer.alloc(64)];
    const reads: { text: string; into: Buffer }[] = [];
    let current = first;
    expect(
      io.takeUserBufferReads((n) => {
        reads.push({ text: current.toString('latin1', 0, n), into: current });
        current = buffers[reads.length - 1] ?? current;
        return current;
      }),
    ).toBe(true);
    await new Promise<void>((r) => s.once('connect', () => r()));
    const peer = await accepted;
    peer.write('one');
    await until(() => reads.length === 1, 'the first read');
    peer.write('two');
    await until(() => reads.length === 2, 'the second read');
    expect(reads.map((r) => r.text)).toEqual(['one', 'two']);
    // Each read went into the buffer the previous one returned.
    expect(reads[0]!.into).toBe(first);
    expect(reads[1]!.into).toBe(buffers[0]);

    s.pause();
    peer.write('three');
    await new Promise((r) => setTimeout(r, 100));
    expect(reads).toHaveLength(2);
    s.resume();
    await until(() => reads.length === 3, 'the read after resuming');
    expect(reads[2]).toEqual({ text: 'three', into: buffers[1] });

    const ended = new Promise<void>((r) => s.once('end', () => r()));
    peer.end();
    await ended;
    expect(viaNet).toEqual([]);
    expect(s.bytesRead).toBe('onetwothree'.length);
    s.destroy();
  });

  it("leaves the peer's FIN to the socket: it ends and closes as net.Socket does", async () => {
    const { accepted, peer } = await pair();
    const ev = new Recorder();
    const io = new HandleIo(accepted, ev);
    io.takeReads();
    const closed = new Promise<void>((r) => accepted.once('close', () => r()));
    const ended = new Promise<void>((r) => accepted.once('end', () => r()));
    const atPeer = collect(peer);
    peer.end('last');
    await ended;
    expect(ev.text()).toBe('last');
    // allowHalfOpen is off: the socket ends its side too and closes.
    await closed;
    await atPeer.ended;
  });

  it('destroys the socket with the error when a write fails, and writes nothing once it is gone', async () => {
    const { accepted, peer } = await pair();
    const io = new HandleIo(accepted, new Recorder());
    io.takeReads();
    // Not reading, so the peer's RST is met by the next write, not by a read.
    io.pauseReads();
    const failed = new Promise<NodeJS.ErrnoException>((r) => accepted.once('error', r));
    const closed = new Promise<void>((r) => accepted.once('close', () => r()));
    peer.resetAndDestroy();
    await new Promise((r) => setTimeout(r, 50));
    expect(io.write('after the reset')).toBe(false);
    expect((await failed).syscall).toBe('write');
    await closed;
    expect(io.write('late')).toBe(false);
    expect(io.pending).toBe(0);
  });
});
