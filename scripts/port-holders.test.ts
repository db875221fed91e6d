// The local cloud's port check (port-holders.mjs) on real sockets held by this test process: TCP and UDP
// holders are named by pid from /proc, free ports pass, and two services wanting one port are caught.
import { createSocket, type Socket } from 'node:dgram';
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { portHolder, takenPorts } from './port-holders.mjs';

const open: (Server | Socket)[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

const tcp = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
    open.push(server);
  });
const udp = () =>
  new Promise<number>((resolve) => {
    const socket = createSocket('udp4');
    socket.bind(0, '127.0.0.1', () => resolve(socket.address().port));
    open.push(socket);
  });

describe('port holders', () => {
  it('names the process holding a TCP or a UDP port', async () => {
    const t = await tcp();
    const u = await udp();
    expect(portHolder(t, 'tcp')).toMatchObject({ pid: process.pid });
    expect(portHolder(u, 'udp')).toMatchObject({ pid: process.pid });
    const lines: string[] = await takenPorts([
      { host: '127.0.0.1', port: t, protocol: 'tcp', what: 'API' },
      { host: '127.0.0.1', port: u, protocol: 'udp', what: 'DNS' },
    ]);
    expect(lines).toEqual([
      expect.stringMatching(new RegExp(`^127\\.0\\.0\\.1:${t}/tcp \\(API\\) is in use by pid ${process.pid}: \\S`)),
      expect.stringMatching(new RegExp(`^127\\.0\\.0\\.1:${u}/udp \\(DNS\\) is in use by pid ${process.pid}: \\S`)),
    ]);
  });

  it('passes free ports, and catches two services wanting the same one', async () => {
    const t = await tcp();
    // Free again once closed.
    await Promise.all(open.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
    expect(await takenPorts([{ host: '127.0.0.1', port: t, protocol: 'tcp', what: 'API' }])).toEqual([]);
    expect(
      await takenPorts([
        { host: '127.0.0.1', port: t, protocol: 'tcp', what: 'health-worker-1 metrics' },
        { host: '127.0.0.1', port: t, protocol: 'tcp', what: 'demo backend 1' },
      ]),
    ).toEqual([`127.0.0.1:${t}/tcp is wanted by both health-worker-1 metrics and demo backend 1`]);
  });
});
