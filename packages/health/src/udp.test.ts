import dgram from 'node:dgram';
import { once } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { closedUdpPort, manualClock, within } from '../test/servers.js';
import { probeUdp } from './udp.js';

const sockets: dgram.Socket[] = [];
afterEach(async () => {
  await Promise.all(sockets.splice(0).map((socket) => new Promise<void>((resolve) => socket.close(() => resolve()))));
});

/** A UDP backend on 127.0.0.1 that answers each datagram with `reply(payload)` (nothing when it returns null). */
async function udpBackend(reply: (payload: string) => string | null): Promise<{ port: number; received: string[] }> {
  const socket = dgram.createSocket('udp4');
  sockets.push(socket);
  const received: string[] = [];
  socket.on('message', (message, remote) => {
    received.push(message.toString('utf8'));
    const answer = reply(message.toString('utf8'));
    if (answer !== null) socket.send(answer, remote.port, remote.address);
  });
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  return { port: socket.address().port, received };
}

describe('probeUdp', () => {
  it('succeeds when an echo server sends the expected reply', async () => {
    const { port, received } = await udpBackend((payload) => payload);
    const result = await probeUdp({ address: '127.0.0.1', port, request: 'ping', expect: 'ping' }, { timeoutMs: 2000 });
    expect(result).toMatchObject({ ok: true });
    expect(received).toEqual(['ping']);
  });

  it('succeeds when the reply contains the expected text', async () => {
    const { port } = await udpBackend(() => 'status: ok, load 0.1');
    const result = await probeUdp({ address: '127.0.0.1', port, request: 'hi', expect: 'ok' }, { timeoutMs: 2000 });
    expect(result).toMatchObject({ ok: true });
  });

  it('counts any reply when nothing is expected', async () => {
    const { port } = await udpBackend(() => 'whatever');
    expect(await probeUdp({ address: '127.0.0.1', port, request: 'hi' }, { timeoutMs: 2000 })).toMatchObject({
      ok: true,
    });
    expect(
      await probeUdp({ address: '127.0.0.1', port, request: 'hi', expect: '' }, { timeoutMs: 2000 }),
    ).toMatchObject({ ok: true });
  });

  it('sends the request as UTF-8 and an empty datagram when none is set', async () => {
    const { port, received } = await udpBackend(() => 'pong');
    await probeUdp({ address: '127.0.0.1', port, request: 'état?' }, { timeoutMs: 2000 });
    await probeUdp({ address: '127.0.0.1', port }, { timeoutMs: 2000 });
    expect(received).toEqual(['état?', '']);
  });

  it('times out when the reply never contains the expected text', async () => {
    const { port, received } = await udpBackend(() => 'nope');
    const result = await probeUdp({ address: '127.0.0.1', port, request: 'ping', expect: 'pong' }, { timeoutMs: 150 });
    expect(result).toMatchObject({ ok: false, error: 'timeout after 150ms' });
    expect(received).toEqual(['ping']);
  });

  it('times out when the backend stays silent', async () => {
    const { port } = await udpBackend(() => null);
    const result = await probeUdp({ address: '127.0.0.1', port, request: 'ping' }, { timeoutMs: 150 });
    expect(result).toMatchObject({ ok: false, error: 'timeout after 150ms' });
  });

  it('fails at once with ECONNREFUSED when nothing listens (ICMP port unreachable)', async () => {
    const port = await closedUdpPort();
    const result = await probeUdp({ address: '127.0.0.1', port, request: 'ping', expect: 'pong' }, { timeoutMs: 5000 });
    expect(result).toMatchObject({ ok: false, error: 'ECONNREFUSED' });
    expect(result.latencyMs).toBeLessThan(5000);
  });

  it('closes its socket whatever the outcome', async () => {
    const { port } = await udpBackend((payload) => payload);
    const silent = await udpBackend(() => null);
    const refused = await closedUdpPort();
    const closed: Promise<unknown>[] = [];
    const createSocket = dgram.createSocket.bind(dgram);
    const spy = vi.spyOn(dgram, 'createSocket').mockImplementation(((type: dgram.SocketType) => {
      const socket = createSocket(type);
      closed.push(new Promise((resolve) => socket.once('close', resolve)));
      return socket;
    }) as typeof dgram.createSocket);
    try {
      await probeUdp({ address: '127.0.0.1', port, request: 'a', expect: 'a' }, { timeoutMs: 2000 });
      await probeUdp({ address: '127.0.0.1', port: silent.port, request: 'a' }, { timeoutMs: 50 });
      await probeUdp({ address: '127.0.0.1', port: refused, request: 'a' }, { timeoutMs: 2000 });
      await probeUdp({ address: 'no such host.invalid', port: 53, request: 'a' }, { timeoutMs: 2000 });
    } finally {
      spy.mockRestore();
    }
    expect(closed).toHaveLength(4);
    await within(Promise.all(closed), 2000, 'probe sockets closed');
  });

  it('times out on the injected clock', async () => {
    const { port } = await udpBackend(() => null);
    const clock = manualClock();
    const pending = probeUdp({ address: '127.0.0.1', port, request: 'ping' }, { timeoutMs: 3000, clock });
    clock.fireDeadline();
    expect(await pending).toEqual({ ok: false, latencyMs: 3000, error: 'timeout after 3000ms' });
  });

  it('never rejects on a bad address', async () => {
    const result = await probeUdp({ address: 'no such host.invalid', port: 53, request: 'x' }, { timeoutMs: 2000 });
    expect(result.ok).toBe(false);
    expect(typeof result.error).toBe('string');
  });
});
