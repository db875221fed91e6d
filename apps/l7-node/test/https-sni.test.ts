import { X509Certificate } from 'node:crypto';
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  id,
  listener,
  makeCertificates,
  proxyHeader,
  type Running,
  startApp,
  startBackend,
  type TestBackend,
} from './helpers.js';

// HTTPS termination: SNI picks the certificate whose SANs match (wildcards included), the first one is
// the default, TLS below 1.2 is refused, and the backend sees X-Forwarded-Proto https.

describe('https with SNI', () => {
  let be: TestBackend;
  let node: Running;
  let cleanup: () => void;
  const ids = { def: id('cert'), shop: id('cert'), wild: id('cert') };

  beforeAll(async () => {
    const made = makeCertificates([
      { name: 'def', cn: 'default.test', sans: ['default.test'] },
      { name: 'shop', cn: 'shop.test', sans: ['shop.test', 'www.shop.test'] },
      { name: 'wild', cn: 'example.test', sans: ['*.example.test'] },
    ]);
    cleanup = made.cleanup;
    be = await startBackend('tls-backend');
    node = await startApp(
      listener({
        protocol: 'https',
        certificates: [
          { id: ids.def, ...made.certs.get('def')! },
          { id: ids.shop, ...made.certs.get('shop')! },
          { id: ids.wild, ...made.certs.get('wild')! },
        ],
        backends: [be.spec],
      }),
    );
  });
  afterAll(async () => {
    await node.app.close();
    await be.close();
    cleanup();
  });

  function handshake(servername: string | undefined, options: { maxVersion?: 'TLSv1.1' } = {}) {
    return new Promise<{ cn: string; protocol: string | null; body: string }>((resolve, reject) => {
      const s = tlsConnect({
        host: '127.0.0.1',
        port: node.direct,
        ...(servername ? { servername } : {}),
        rejectUnauthorized: false,
        ...(options.maxVersion ? { maxVersion: options.maxVersion, minVersion: 'TLSv1' } : {}),
      });
      let body = '';
      s.on('secureConnect', () => {
        s.write(`GET /tls HTTP/1.1\r\nHost: ${servername ?? 'x'}\r\nConnection: close\r\n\r\n`);
      });
      s.on('data', (c) => (body += c.toString()));
      s.on('end', () => {
        const cert = new X509Certificate(s.getPeerX509Certificate()!.raw);
        resolve({ cn: cert.subject, protocol: s.getProtocol(), body });
      });
      s.on('error', reject);
    });
  }

  it.each([
    ['shop.test', 'CN=shop.test'],
    ['www.shop.test', 'CN=shop.test'],
    ['api.example.test', 'CN=example.test'],
    ['unknown.test', 'CN=default.test'],
    [undefined, 'CN=default.test'],
  ])('SNI %s → %s', async (servername, cn) => {
    const r = await handshake(servername);
    expect(r.cn).toBe(cn);
    expect(r.body.startsWith('HTTP/1.1 200')).toBe(true);
  });

  it('forwards with X-Forwarded-Proto https and negotiates TLS 1.2+', async () => {
    const r = await handshake('shop.test');
    expect(['TLSv1.2', 'TLSv1.3']).toContain(r.protocol);
    expect(be.requests.at(-1)!.headers['x-forwarded-proto']).toBe('https');
  });

  it('refuses TLS 1.1', async () => {
    await expect(handshake('shop.test', { maxVersion: 'TLSv1.1' })).rejects.toThrow();
  });

  it('terminates TLS behind a PROXY v2 header (the L4 path), with the client from the header', async () => {
    const raw = netConnect(node.proxy, '127.0.0.1');
    await new Promise<void>((r) => raw.once('connect', () => r()));
    raw.write(proxyHeader('192.0.2.44', 5555, 443));
    const body = await new Promise<string>((resolve, reject) => {
      const s = tlsConnect({ socket: raw, servername: 'shop.test', rejectUnauthorized: false });
      let got = '';
      s.on('secureConnect', () => s.write('GET /via-proxy HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n'));
      s.on('data', (c) => (got += c.toString()));
      s.on('end', () => resolve(got));
      s.on('error', reject);
    });
    expect(body.startsWith('HTTP/1.1 200')).toBe(true);
    const seen = be.requests.at(-1)!;
    expect(seen.headers['x-real-ip']).toBe('192.0.2.44');
    expect(seen.headers['x-forwarded-port']).toBe('443');
    expect(seen.headers['x-forwarded-proto']).toBe('https');
  });
});
