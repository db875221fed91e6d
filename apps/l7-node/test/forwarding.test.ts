import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { id, listener, type Running, rawExchange, startApp, startBackend, type TestBackend } from './helpers.js';

// Plain HTTP forwarding on the direct port: headers at the backend, hop-by-hop removal, rules end to end.

describe('forwarding', () => {
  let a: TestBackend;
  let b: TestBackend;
  let node: Running;
  const sgApi = id('sg');
  const sgDefault = id('sg');

  beforeAll(async () => {
    a = await startBackend('a');
    b = await startBackend('b');
    node = await startApp(
      listener({
        defaultServerGroupId: sgDefault,
        rules: [
          { id: id('rule'), domain: '*.example.com', path: '/api', serverGroupId: sgApi, priority: 1 },
          { id: id('rule'), domain: 'www.example.com', path: null, serverGroupId: sgDefault, priority: 1 },
        ],
        serverGroups: [
          { id: sgApi, backends: [a.spec] },
          { id: sgDefault, backends: [b.spec] },
        ],
      }),
    );
  });
  afterAll(async () => {
    await node.app.close();
    await a.close();
    await b.close();
  });

  async function get(path: string, headers: Record<string, string>) {
    const res = await request(`${node.url}${path}`, { headers });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, json: JSON.parse(text) as Record<string, any> };
  }

  it('sets the forwarding headers, replaces X-Forwarded-For and drops client-set ones', async () => {
    const r = await get('/x', {
      host: 'www.example.com',
      'x-forwarded-for': '10.9.9.9',
      'x-real-ip': '6.6.6.6',
      'x-forwarded-proto': 'https',
    });
    expect(r.status).toBe(200);
    expect(r.json.backend).toBe('b');
    const h = r.json.headers;
    expect(h['x-forwarded-for']).toBe('127.0.0.1');
    expect(h['x-real-ip']).toBe('127.0.0.1');
    expect(h['x-forwarded-proto']).toBe('http');
    expect(h['x-forwarded-port']).toBe(String(node.direct));
    expect(h.host).toBe('www.example.com');
  });

  it('removes hop-by-hop headers and those the Connection header names', async () => {
    const raw = await rawExchange(
      node.direct,
      'GET /hop HTTP/1.1\r\nHost: www.example.com\r\nConnection: close, x-secret\r\nX-Secret: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nProxy-Connection: keep-alive\r\n\r\n',
    );
    const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as { headers: Record<string, string> };
    for (const h of ['x-secret', 'keep-alive', 'te', 'proxy-connection']) expect(body.headers[h]).toBeUndefined();
  });

  it('routes by wildcard domain and path prefix, and falls back to the default group', async () => {
    expect((await get('/api/users', { host: 'shop.example.com' })).json.backend).toBe('a');
    expect((await get('/other', { host: 'shop.example.com' })).json.backend).toBe('b');
    expect((await get('/api', { host: 'example.com' })).json.backend).toBe('b');
  });
});

describe('no matching rule', () => {
  it('answers a 404 problem page', async () => {
    const sg = id('sg');
    const be = await startBackend('x');
    const node = await startApp(
      listener({
        defaultServerGroupId: null,
        rules: [{ id: id('rule'), domain: 'a.test', path: null, serverGroupId: sg, priority: 1 }],
        serverGroups: [{ id: sg, backends: [be.spec] }],
      }),
    );
    const res = await request(`${node.url}/`, { headers: { host: 'b.test' } });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(await res.body.json()).toMatchObject({ status: 404, title: 'Not Found' });
    expect(be.requests).toHaveLength(0);
    await node.app.close();
    await be.close();
  });

  it('fails open when no backend of the group is healthy: the requests still reach them, and are counted', async () => {
    const x = await startBackend('x');
    const y = await startBackend('y');
    const node = await startApp(
      listener({
        scheduler: 'rr',
        backends: [
          { ...x.spec, healthy: false },
          { ...y.spec, healthy: false },
        ],
      }),
    );
    const seen = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const res = await request(`${node.url}/`);
      expect(res.statusCode).toBe(200);
      seen.add(((await res.body.json()) as { backend: string }).backend);
    }
    expect([...seen].sort()).toEqual(['x', 'y']);
    const failOpen = (await node.app.metrics.failOpen.get()).values.reduce((s, v) => s + v.value, 0);
    expect(failOpen).toBe(4);
    await node.app.close();
    await x.close();
    await y.close();
  });

  it('answers 503 when the group has no backend with a positive weight', async () => {
    const be = await startBackend('x');
    const node = await startApp(listener({ backends: [{ ...be.spec, weight: 0 }] }));
    const res = await request(`${node.url}/`);
    expect(res.statusCode).toBe(503);
    expect(await res.body.json()).toMatchObject({ detail: 'no healthy backend server' });
    expect(be.requests).toHaveLength(0);
    await node.app.close();
    await be.close();
  });
});
