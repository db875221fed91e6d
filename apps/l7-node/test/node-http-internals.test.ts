import { once } from 'node:events';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, connect, createServer as createNetServer, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { checkHttpInternals, startConnectionTracking, transportOf } from '../src/node-http-internals.js';
import { makeCertificates } from './helpers.js';

// Runs on every runtime CI tests (Node 20 and 24): what the L7 node's listeners need from node:http and
// node:tls internals, checked by behaviour, so a runtime that changes them fails here by name.

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0).reverse()) close();
});

/** A plain TCP server handing every accepted socket to `server` with 'connection', as the L7 listener does. */
async function handOver(server: Server): Promise<{ port: number; accepted: Socket[] }> {
  const accepted: Socket[] = [];
  const front = createNetServer((s) => {
    accepted.push(s);
    server.emit('connection', s);
  });
  front.listen(0, '127.0.0.1');
  await once(front, 'listening');
  closers.push(() => {
    for (const s of accepted) s.destroy();
    front.close();
    server.close();
  });
  return { port: (front.address() as AddressInfo).port, accepted };
}

/** Sends an unfinished request head and resolves with what the server answers within `ms`. */
async function slowHead(port: number, ms: number): Promise<string> {
  const c = connect(port, '127.0.0.1');
  closers.push(() => c.destroy());
  await once(c, 'connect');
  c.write('GET / HTTP/1.1\r\nhost: x\r\n');
  let got = '';
  c.on('data', (d: Buffer) => {
    got += d.toString('latin1');
  });
  await new Promise((r) => setTimeout(r, ms));
  return got;
}

const timeouts = { headersTimeout: 300, requestTimeout: 300, connectionsCheckingInterval: 50 };

describe('on this runtime', () => {
  it('passes the start-up check', () => {
    expect(() => checkHttpInternals()).not.toThrow();
  });

  it('a server that never listened enforces headersTimeout once tracking is started', async () => {
    const server = createHttpServer(timeouts, (_req, res) => res.end());
    startConnectionTracking(server);
    const { port } = await handOver(server);
    expect(await slowHead(port, 1500)).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('without it, the same server never times the request out (what the check guards)', async () => {
    const server = createHttpServer(timeouts, (_req, res) => res.end());
    const { port } = await handOver(server);
    expect(await slowHead(port, 1000)).toBe('');
  });

  it("a TLS request's socket leads back to the plain socket it was handed over on", async () => {
    const { certs, cleanup } = makeCertificates([{ name: 'a', cn: 'a.test', sans: ['a.test'] }]);
    closers.push(cleanup);
    const cert = certs.get('a')!;
    const server = createHttpsServer({ cert: cert.certificatePem, key: cert.privateKeyPem });
    const seen: Socket[] = [];
    server.on('request', (req, res) => {
      seen.push(transportOf(req.socket));
      res.end('ok');
    });
    const { port, accepted } = await handOver(server);
    const client = tlsConnect({ port, host: '127.0.0.1', servername: 'a.test', rejectUnauthorized: false });
    closers.push(() => client.destroy());
    await once(client, 'secureConnect');
    client.write('GET / HTTP/1.1\r\nhost: a.test\r\nconnection: close\r\n\r\n');
    client.resume();
    await once(client, 'end');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBe(accepted[0]);
  });
});

describe('a runtime that changed them', () => {
  it("stops the node when 'listening' no longer starts connection tracking", () => {
    const server = createHttpServer();
    closers.push(() => server.close());
    server.removeAllListeners('listening');
    expect(() => startConnectionTracking(server)).toThrow(/changed node:http\/node:tls internals.*'listening'/);
  });
});
