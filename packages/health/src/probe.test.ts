import dgram from 'node:dgram';
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { close, closedTcpPort, listen } from '../test/servers.js';
import { probe } from './probe.js';
import { resolveHealthCheck } from './settings.js';

const servers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map(close));
});

describe('probe (settings → the right check)', () => {
  it('runs a TCP check on the check port, not the server port', async () => {
    const server = net.createServer();
    servers.push(server);
    const checkPort = await listen(server);
    const serverPort = await closedTcpPort();
    const settings = resolveHealthCheck({ port: checkPort }, { listenerProtocol: 'tcp', serverPort });
    expect(await probe('127.0.0.1', settings)).toMatchObject({ ok: true });
    const onServerPort = resolveHealthCheck({}, { listenerProtocol: 'tcp', serverPort });
    expect(await probe('127.0.0.1', onServerPort)).toMatchObject({ ok: false, error: 'ECONNREFUSED' });
  });

  it('runs an HTTP check with method, path, domain and codes from the settings', async () => {
    const seen: Array<[string | undefined, string | undefined, string | undefined]> = [];
    const server = http.createServer((req, res) => {
      seen.push([req.method, req.url, req.headers.host]);
      res.writeHead(req.url === '/hc' ? 404 : 200).end();
    });
    servers.push(server);
    const port = await listen(server);
    const settings = resolveHealthCheck(
      { method: 'GET', path: '/hc', domain: 'a.test', httpCodes: ['http_4xx'] },
      { listenerProtocol: 'http', serverPort: port },
    );
    expect(await probe('127.0.0.1', settings)).toMatchObject({ ok: true });
    expect(seen).toEqual([['GET', '/hc', 'a.test']]);
    const defaults = resolveHealthCheck({ path: '/hc' }, { listenerProtocol: 'http', serverPort: port });
    expect(await probe('127.0.0.1', defaults)).toMatchObject({
      ok: false,
      error: 'status 404 not in http_2xx,http_3xx',
    });
  });

  it('runs a UDP check with request and expect from the settings', async () => {
    const socket = dgram.createSocket('udp4');
    socket.on('message', (message, remote) => socket.send(`re:${message}`, remote.port, remote.address));
    socket.bind(0, '127.0.0.1');
    await once(socket, 'listening');
    try {
      const context = { listenerProtocol: 'udp', serverPort: socket.address().port } as const;
      expect(
        await probe('127.0.0.1', resolveHealthCheck({ udpRequest: 'hi', udpExpect: 're:hi' }, context)),
      ).toMatchObject({
        ok: true,
      });
    } finally {
      await new Promise<void>((resolve) => socket.close(() => resolve()));
    }
  });
});
