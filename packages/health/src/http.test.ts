import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import {
  close,
  closedTcpPort,
  listen,
  manualClock,
  TEST_CERT,
  TEST_KEY,
  trackConnections,
  within,
} from '../test/servers.js';
import type { HttpCodeClass } from './http.js';
import { buildHttpRequest, httpCodeClass, probeHttp, sniName } from './http.js';

interface Seen {
  method: string | undefined;
  url: string | undefined;
  host: string | undefined;
  rawHeaderNames: string[];
  httpVersion: string;
  servername?: string | false | null;
}

const servers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map(close));
});

/** A backend that answers `/<code>` with that status and records what it received. */
function handler(seen: Seen[]): http.RequestListener {
  return (req, res) => {
    seen.push({
      method: req.method,
      url: req.url,
      host: req.headers.host,
      rawHeaderNames: req.rawHeaders.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase()),
      httpVersion: req.httpVersion,
      servername: (req.socket as TLSSocket).servername,
    });
    const status = Number(req.url?.slice(1)) || 200;
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end(req.method === 'HEAD' ? undefined : 'x'.repeat(1024));
  };
}

async function httpBackend(): Promise<{ port: number; seen: Seen[]; server: http.Server }> {
  const seen: Seen[] = [];
  const server = http.createServer(handler(seen));
  servers.push(server);
  return { port: await listen(server), seen, server };
}

async function rawBackend(onConnection: (socket: net.Socket) => void): Promise<{ port: number; server: net.Server }> {
  const server = net.createServer(onConnection);
  servers.push(server);
  return { port: await listen(server), server };
}

const fast = { timeoutMs: 2000 };

describe('probeHttp status classes', () => {
  const cases: Array<{ status: number; codes?: HttpCodeClass[]; ok: boolean; error?: string }> = [
    { status: 200, ok: true },
    { status: 204, ok: true },
    { status: 301, ok: true },
    { status: 404, ok: false, error: 'status 404 not in http_2xx,http_3xx' },
    { status: 503, ok: false, error: 'status 503 not in http_2xx,http_3xx' },
    { status: 404, codes: ['http_4xx'], ok: true },
    { status: 200, codes: ['http_4xx'], ok: false, error: 'status 200 not in http_4xx' },
    { status: 503, codes: ['http_2xx', 'http_5xx'], ok: true },
    { status: 302, codes: ['http_2xx'], ok: false, error: 'status 302 not in http_2xx' },
  ];
  for (const { status, codes, ok, error } of cases) {
    it(`${status} with ${codes?.join(',') ?? 'the default classes'} → ${ok ? 'healthy' : 'unhealthy'}`, async () => {
      const { port } = await httpBackend();
      const result = await probeHttp({ address: '127.0.0.1', port, path: `/${status}`, httpCodes: codes }, fast);
      expect(result.ok).toBe(ok);
      expect(result.error).toBe(error);
    });
  }

  it('maps codes to classes', () => {
    expect([199, 200, 299, 300, 399, 400, 499, 500, 599, 600].map(httpCodeClass)).toEqual([
      undefined,
      'http_2xx',
      'http_2xx',
      'http_3xx',
      'http_3xx',
      'http_4xx',
      'http_4xx',
      'http_5xx',
      'http_5xx',
      undefined,
    ]);
  });
});

describe('probeHttp request', () => {
  it('sends HEAD to the path without a Host header when no domain is set', async () => {
    const { port, seen } = await httpBackend();
    const result = await probeHttp({ address: '127.0.0.1', port, path: '/health?deep=1' }, fast);
    expect(result.ok).toBe(true);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'HEAD', url: '/health?deep=1', host: undefined, httpVersion: '1.0' });
    expect(seen[0]?.rawHeaderNames).not.toContain('host');
  });

  it('sends the domain as Host when set', async () => {
    const { port, seen } = await httpBackend();
    const result = await probeHttp({ address: '127.0.0.1', port, domain: 'www.example.test' }, fast);
    expect(result.ok).toBe(true);
    expect(seen[0]).toMatchObject({ method: 'HEAD', url: '/', host: 'www.example.test' });
    expect(seen[0]?.rawHeaderNames.filter((name) => name === 'host')).toHaveLength(1);
  });

  it('treats an empty domain as no domain', () => {
    expect(buildHttpRequest('HEAD', '/', undefined)).not.toMatch(/host:/i);
    expect(buildHttpRequest('GET', '/x', 'a.test')).toMatch(/^GET \/x HTTP\/1\.0\r\nHost: a\.test\r\n/);
  });

  it('uses GET when asked and does not wait for the body', async () => {
    let requests = 0;
    const server = http.createServer((_req, res) => {
      requests++;
      // Headers, then a body that never ends: only a probe that ignores the body can finish.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.write(Buffer.alloc(64 * 1024));
    });
    servers.push(server);
    const tracked = trackConnections(server);
    const port = await listen(server);
    const result = await probeHttp({ address: '127.0.0.1', port, method: 'GET' }, fast);
    expect(result.ok).toBe(true);
    expect(requests).toBe(1);
    await within(Promise.all(tracked.closed), 2000, 'server-side close');
  });

  it('opens a fresh connection for every check and leaves none open', async () => {
    const { port, server } = await httpBackend();
    const tracked = trackConnections(server);
    for (let i = 0; i < 3; i++) expect((await probeHttp({ address: '127.0.0.1', port }, fast)).ok).toBe(true);
    expect(tracked.sockets).toHaveLength(3);
    await within(Promise.all(tracked.closed), 2000, 'server-side close');
    expect(await new Promise((resolve) => server.getConnections((_, n) => resolve(n)))).toBe(0);
  });

  it('refuses a path or domain that would split the request, without connecting', async () => {
    const { port, seen, server } = await httpBackend();
    const tracked = trackConnections(server);
    const badPath = await probeHttp({ address: '127.0.0.1', port, path: '/ HTTP/1.0\r\nX: y' }, fast);
    expect(badPath).toMatchObject({ ok: false, error: 'invalid path' });
    const badDomain = await probeHttp({ address: '127.0.0.1', port, domain: 'a.test\r\nX: y' }, fast);
    expect(badDomain).toMatchObject({ ok: false, error: 'invalid domain' });
    expect(seen).toHaveLength(0);
    expect(tracked.sockets).toHaveLength(0);
  });
});

describe('probeHttp failures', () => {
  it('fails with ECONNREFUSED when nothing listens', async () => {
    const port = await closedTcpPort();
    expect(await probeHttp({ address: '127.0.0.1', port }, fast)).toMatchObject({ ok: false, error: 'ECONNREFUSED' });
  });

  it('times out on a backend that accepts and never answers', async () => {
    let received = '';
    const { port } = await rawBackend((socket) => {
      socket.on('data', (chunk) => {
        received += chunk.toString('latin1');
      });
    });
    const result = await probeHttp({ address: '127.0.0.1', port }, { timeoutMs: 150 });
    expect(result).toMatchObject({ ok: false, error: 'timeout after 150ms' });
    expect(result.latencyMs).toBeGreaterThanOrEqual(140);
    expect(received).toMatch(/^HEAD \/ HTTP\/1\.0\r\n/);
  });

  it('times out on a backend that sends a partial status line', async () => {
    const { port } = await rawBackend((socket) => {
      socket.write('HTTP/1.1 20');
    });
    expect(await probeHttp({ address: '127.0.0.1', port }, { timeoutMs: 150 })).toMatchObject({
      ok: false,
      error: 'timeout after 150ms',
    });
  });

  it('counts the deadline from the start on the injected clock', async () => {
    const { port } = await rawBackend(() => {});
    const clock = manualClock();
    const pending = probeHttp({ address: '127.0.0.1', port }, { timeoutMs: 5000, clock });
    clock.fireDeadline();
    expect(await pending).toEqual({ ok: false, latencyMs: 5000, error: 'timeout after 5000ms' });
  });

  it('fails on a backend that does not speak HTTP', async () => {
    const { port } = await rawBackend((socket) => {
      socket.write('SSH-2.0-OpenSSH_9.6\r\n');
    });
    expect(await probeHttp({ address: '127.0.0.1', port }, fast)).toMatchObject({
      ok: false,
      error: 'invalid status line',
    });
  });

  it('fails on a backend that closes without answering', async () => {
    const { port } = await rawBackend((socket) => {
      socket.end();
    });
    const result = await probeHttp({ address: '127.0.0.1', port }, fast);
    expect(result.ok).toBe(false);
    expect(['connection closed before response', 'ECONNRESET', 'EPIPE']).toContain(result.error);
  });

  it('accepts a status line without a reason phrase and a bare LF', async () => {
    const { port } = await rawBackend((socket) => {
      socket.write('HTTP/1.1 204\n\n');
    });
    expect(await probeHttp({ address: '127.0.0.1', port }, fast)).toMatchObject({ ok: true });
  });
});

describe('probeHttp over TLS', () => {
  async function httpsBackend(): Promise<{ port: number; seen: Seen[]; server: https.Server }> {
    const seen: Seen[] = [];
    const server = https.createServer({ key: TEST_KEY, cert: TEST_CERT }, handler(seen));
    servers.push(server);
    return { port: await listen(server), seen, server };
  }

  it('checks an HTTPS backend without verifying its self-signed certificate, and closes', async () => {
    const { port, seen, server } = await httpsBackend();
    const tracked = trackConnections(server);
    const result = await probeHttp({ address: '127.0.0.1', port, https: true, path: '/204' }, fast);
    expect(result).toMatchObject({ ok: true });
    expect(seen[0]).toMatchObject({ method: 'HEAD', url: '/204', host: undefined, servername: false });
    await within(Promise.all(tracked.closed), 2000, 'server-side close');
    expect(tracked.sockets).toHaveLength(1);
  });

  it('sends the domain as SNI and Host', async () => {
    const { port, seen } = await httpsBackend();
    const result = await probeHttp({ address: '127.0.0.1', port, https: true, domain: 'backend.test' }, fast);
    expect(result).toMatchObject({ ok: true });
    expect(seen[0]).toMatchObject({ host: 'backend.test', servername: 'backend.test' });
  });

  it('honours the status classes over TLS', async () => {
    const { port } = await httpsBackend();
    const result = await probeHttp({ address: '127.0.0.1', port, https: true, path: '/500' }, fast);
    expect(result).toMatchObject({ ok: false, error: 'status 500 not in http_2xx,http_3xx' });
  });

  it('fails when the backend does not speak TLS', async () => {
    const { port } = await httpBackend();
    const result = await probeHttp({ address: '127.0.0.1', port, https: true }, fast);
    expect(result.ok).toBe(false);
    expect(result.error).toBeTruthy();
  });

  it('derives SNI names from host values', () => {
    expect(sniName('backend.test')).toBe('backend.test');
    expect(sniName('backend.test:8443')).toBe('backend.test');
    expect(sniName('127.0.0.1')).toBeUndefined();
    expect(sniName('[::1]:443')).toBeUndefined();
    expect(sniName('::1')).toBeUndefined();
  });
});
