import { once } from 'node:events';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  canReadTcpTable,
  close,
  closedTcpPort,
  listen,
  manualClock,
  tcpStatesOnPort,
  trackConnections,
  within,
} from '../test/servers.js';
import { probeTcp } from './tcp.js';

const servers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map(close));
});

async function startServer(): Promise<{ server: net.Server; port: number }> {
  const server = net.createServer();
  servers.push(server);
  return { server, port: await listen(server) };
}

describe('probeTcp', () => {
  it('succeeds when the port accepts a connection', async () => {
    const { port } = await startServer();
    const result = await probeTcp({ address: '127.0.0.1', port }, { timeoutMs: 2000 });
    expect(result.ok).toBe(true);
    expect(result.error).toBeUndefined();
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
    expect(result.latencyMs).toBeLessThan(2000);
  });

  it('fails with ECONNREFUSED when nothing listens', async () => {
    const port = await closedTcpPort();
    const result = await probeTcp({ address: '127.0.0.1', port }, { timeoutMs: 2000 });
    expect(result).toMatchObject({ ok: false, error: 'ECONNREFUSED' });
  });

  it('resets the connection: the server sees RST and nothing stays ESTABLISHED or in TIME_WAIT', async () => {
    const { server, port } = await startServer();
    const tracked = trackConnections(server);
    const accepted = once(server, 'connection');
    const result = await probeTcp({ address: '127.0.0.1', port }, { timeoutMs: 2000 });
    expect(result.ok).toBe(true);
    await within(accepted, 2000, 'accept');
    await within(Promise.all(tracked.closed), 2000, 'server-side close');
    expect(tracked.sockets).toHaveLength(1);
    // A reset, not a FIN: the server side reads ECONNRESET.
    expect(tracked.errors).toEqual(['ECONNRESET']);
    expect(await new Promise((resolve) => server.getConnections((_, n) => resolve(n)))).toBe(0);
    expect(tracked.peerPorts).toHaveLength(1);
    if (canReadTcpTable()) expect(tcpStatesOnPort(port, tracked.peerPorts[0])).toEqual([]);
  });

  it.runIf(canReadTcpTable())('the TCP table check does see TIME_WAIT after a graceful close (control)', async () => {
    const { server, port } = await startServer();
    const tracked = trackConnections(server);
    const accepted = once(server, 'connection');
    const client = net.connect({ host: '127.0.0.1', port });
    await once(client, 'connect');
    const clientPort = client.localPort;
    await within(accepted, 2000, 'accept');
    client.end();
    tracked.sockets[0]?.end();
    await within(once(client, 'close'), 2000, 'client close');
    expect(tcpStatesOnPort(port, clientPort)).toContain('TIME_WAIT');
  });

  it('times out on the injected clock and closes its socket', async () => {
    const { port } = await startServer();
    const clock = manualClock();
    const pending = probeTcp({ address: '127.0.0.1', port }, { timeoutMs: 5000, clock });
    // The connect cannot have completed yet (it needs the event loop), so the deadline wins.
    clock.fireDeadline();
    const result = await pending;
    expect(result).toEqual({ ok: false, latencyMs: 5000, error: 'timeout after 5000ms' });
    expect(clock.pending()).toBe(0);
  });

  it('measures latency with the injected clock and clears its deadline', async () => {
    const { port } = await startServer();
    const clock = manualClock();
    const pending = probeTcp({ address: '127.0.0.1', port }, { timeoutMs: 5000, clock });
    clock.advance(42);
    const result = await pending;
    expect(result).toEqual({ ok: true, latencyMs: 42 });
    expect(clock.pending()).toBe(0);
  });

  it('reports aborted when the signal fires, before or during the probe', async () => {
    const { port } = await startServer();
    const before = await probeTcp({ address: '127.0.0.1', port }, { timeoutMs: 2000, signal: AbortSignal.abort() });
    expect(before).toMatchObject({ ok: false, error: 'aborted' });
    const controller = new AbortController();
    const pending = probeTcp({ address: '127.0.0.1', port }, { timeoutMs: 2000, signal: controller.signal });
    controller.abort();
    expect(await pending).toMatchObject({ ok: false, error: 'aborted' });
  });

  it('never rejects on a bad address', async () => {
    const result = await probeTcp({ address: 'no such host.invalid', port: 80 }, { timeoutMs: 2000 });
    expect(result.ok).toBe(false);
    expect(typeof result.error).toBe('string');
  });
});
