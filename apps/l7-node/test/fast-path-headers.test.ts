import { request } from 'undici';
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

// What the backend and the client see is the same on both paths: forwarding headers from the PROXY v2
// header, hop-by-hop headers (and those Connection names) dropped both ways, sticky insert cookies.

describe.each([
  ['fast path', true],
  ['node:http path', false],
])('headers (%s)', (_name, fastPath) => {
  let bes: TestBackend[];
  let node: Running;
  beforeAll(async () => {
    bes = await Promise.all(
      ['a', 'b'].map((n) =>
        startBackend(n, (req, res) => {
          req.resume();
          res.setHeader('x-backend', n);
          res.setHeader('connection', 'x-hop');
          res.setHeader('x-hop', 'secret');
          res.setHeader('keep-alive', 'timeout=5');
          res.end(JSON.stringify({ backend: n, headers: req.headers }));
        }),
      ),
    );
    node = await startApp(
      listener({
        scheduler: 'rr',
        stickySession: { mode: 'insert', cookieName: 'SLBSTICKY', cookieTimeout: 600 },
        backends: bes.map((b) => b.spec),
      }),
      { listener: { fastPath } },
    );
  });
  afterAll(async () => {
    await node.app.close();
    await Promise.all(bes.map((b) => b.close()));
  });

  // Headers a backend may take for the client's address or the host it asked for: only the node sets them.
  const forged =
    'X-Forwarded-For: 10.1.1.1\r\nX-Real-IP: 6.6.6.6\r\nX-Forwarded-Proto: gopher\r\nForwarded: for=6.6.6.6;host=evil\r\n' +
    'X-Forwarded-Host: evil\r\nX-Client-IP: 6.6.6.6\r\nTrue-Client-IP: 6.6.6.6\r\nX-Forwarded-Port: 1\r\n';

  async function seenThrough(port: number, src: string): Promise<Record<string, string>> {
    const req = `GET /x HTTP/1.1\r\nHost: h\r\n${forged}Connection: close\r\n\r\n`;
    const raw = await rawExchange(port, Buffer.concat([proxyHeader(src, 40000, 8080), Buffer.from(req)]));
    return (JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as { headers: Record<string, string> }).headers;
  }

  it('forwards the PROXY v2 client address as X-Forwarded-For (replacing the client’s) / X-Real-IP / X-Forwarded-Port', async () => {
    const seen = await seenThrough(node.proxy, '203.0.113.7');
    expect(seen['x-forwarded-for']).toBe('203.0.113.7');
    expect(seen['x-real-ip']).toBe('203.0.113.7');
    expect(seen['x-forwarded-port']).toBe('8080');
    expect(seen['x-forwarded-proto']).toBe('http');
    for (const h of ['forwarded', 'x-forwarded-host', 'x-client-ip', 'true-client-ip']) expect(seen[h]).toBeUndefined();
  });

  it('appends to the client’s X-Forwarded-For when the listener asks for it, still dropping the rest', async () => {
    const app = await startApp(listener({ xForwardedForMode: 'append', backends: [bes[0]!.spec] }), {
      listener: { fastPath },
    });
    try {
      const seen = await seenThrough(app.proxy, '203.0.113.8');
      expect(seen['x-forwarded-for']).toBe('10.1.1.1, 203.0.113.8');
      expect(seen['x-real-ip']).toBe('203.0.113.8');
      for (const h of ['forwarded', 'x-forwarded-host', 'x-client-ip', 'true-client-ip'])
        expect(seen[h]).toBeUndefined();
    } finally {
      await app.app.close();
    }
  });

  it('sends no X-Forwarded-For with xForwardedFor off, and drops the client’s', async () => {
    const app = await startApp(listener({ xForwardedFor: false, backends: [bes[0]!.spec] }), {
      listener: { fastPath },
    });
    try {
      const seen = await seenThrough(app.proxy, '203.0.113.9');
      expect(seen['x-forwarded-for']).toBeUndefined();
      expect(seen['x-real-ip']).toBe('203.0.113.9');
    } finally {
      await app.app.close();
    }
  });

  it('drops hop-by-hop headers and the ones Connection names, both ways', async () => {
    const raw = await rawExchange(
      node.direct,
      // X-Hop: a named header of a length no fixed hop-by-hop or forwarding name has (headers.ts looks at names
      // by length first).
      'GET / HTTP/1.1\r\nHost: h\r\nConnection: x-private, X-HOP, close\r\nX-Private: 1\r\nX-Hop: 1\r\nKeep-Alive: timeout=1\r\nTE: trailers\r\nX-Kept: k\r\n\r\n',
    );
    const head = raw.slice(0, raw.indexOf('\r\n\r\n')).toLowerCase();
    const seen = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as { headers: Record<string, string> };
    expect(seen.headers['x-private']).toBeUndefined();
    expect(seen.headers['x-hop']).toBeUndefined();
    expect(seen.headers['keep-alive']).toBeUndefined();
    expect(seen.headers.te).toBeUndefined();
    expect(seen.headers['x-kept']).toBe('k');
    expect(head).not.toContain('x-hop');
    expect(head).not.toContain('timeout=5');
    expect(head).toContain('x-backend:');
  });

  it('sets the sticky insert cookie and honours it', async () => {
    const first = await request(`${node.url}/`);
    const body = (await first.body.json()) as { backend: string };
    const cookie = String(first.headers['set-cookie']);
    const served = bes.find((b) => cookie.startsWith(`SLBSTICKY=${b.spec.serverId};`));
    expect(served).toBeDefined();
    for (let i = 0; i < 4; i++) {
      const r = await request(`${node.url}/`, { headers: { cookie: `a=1; SLBSTICKY=${served!.spec.serverId}` } });
      expect(((await r.body.json()) as { backend: string }).backend).toBe(body.backend);
      expect(r.headers['set-cookie']).toBeUndefined();
    }
  });
});
