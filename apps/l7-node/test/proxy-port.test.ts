import { connect } from 'node:net';
import { PROXY_V2_SIGNATURE } from '@slb/node-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  listener,
  proxyHeader,
  type Running,
  rawExchange,
  startApp,
  startBackend,
  type TestBackend,
} from './helpers.js';

// The PROXY port: the client address comes from the v2 header; anything else is closed and counted.

describe('PROXY v2 port', () => {
  let be: TestBackend;
  let node: Running;
  beforeAll(async () => {
    be = await startBackend('a');
    node = await startApp(listener({ backends: [be.spec] }), { listener: { proxyHeaderTimeoutMs: 300 } });
  });
  afterAll(async () => {
    await node.app.close();
    await be.close();
  });

  const errors = async () => (await node.app.metrics.proxyHeaderErrors.get()).values.reduce((s, v) => s + v.value, 0);

  it('takes the client address from the header, sent in the same packet as two pipelined requests', async () => {
    const req =
      'GET /one HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 10.1.1.1\r\n\r\nGET /two HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n';
    const raw = await rawExchange(
      node.proxy,
      Buffer.concat([proxyHeader('203.0.113.50', 40000, 8080), Buffer.from(req)]),
    );
    expect(raw.match(/HTTP\/1\.1 200/g)).toHaveLength(2);
    const [first, second] = be.requests.slice(-2);
    expect(first!.url).toBe('/one');
    expect(second!.url).toBe('/two');
    expect(first!.headers['x-real-ip']).toBe('203.0.113.50');
    // The client's own X-Forwarded-For is replaced (the listener default).
    expect(first!.headers['x-forwarded-for']).toBe('203.0.113.50');
    expect(first!.headers['x-forwarded-port']).toBe('8080');
    expect(second!.headers['x-real-ip']).toBe('203.0.113.50');
  });

  it('closes a connection without a header and counts it', async () => {
    const before = await errors();
    const seen = be.requests.length;
    const raw = await rawExchange(node.proxy, 'GET / HTTP/1.1\r\nHost: h\r\n\r\n');
    expect(raw).toBe('');
    expect(await errors()).toBe(before + 1);
    expect(be.requests.length).toBe(seen);
  });

  it('closes a header with a bad version byte', async () => {
    const h = proxyHeader('1.2.3.4', 1, 80);
    h[12] = 0x31;
    const before = await errors();
    expect(await rawExchange(node.proxy, Buffer.concat([h, Buffer.from('GET / HTTP/1.1\r\nHost: h\r\n\r\n')]))).toBe(
      '',
    );
    expect(await errors()).toBe(before + 1);
  });

  it('times out a header that stops half way', async () => {
    const before = await errors();
    const closed = await new Promise<boolean>((resolve) => {
      const s = connect(node.proxy, '127.0.0.1', () => s.write(PROXY_V2_SIGNATURE.subarray(0, 8)));
      s.on('close', () => resolve(true));
      s.on('error', () => {});
    });
    expect(closed).toBe(true);
    expect(await errors()).toBe(before + 1);
  });
});
