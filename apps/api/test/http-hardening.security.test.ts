import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { ADMIN_TOKEN } from './helpers.js';

// One real listening server with small limits, so the deadlines and the cap are observable quickly.
const HEADERS_TIMEOUT_MS = 1000;
const MAX_CONNECTIONS = 5;
const logLines: string[] = [];
let app: FastifyInstance;
let dir: string;
let base: string;
let port: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'slb-api-http-'));
  const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) });
  app = await buildApp({
    dbPath: join(dir, 'slb.db'),
    adminToken: ADMIN_TOKEN,
    logger,
    httpLimits: { headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: 5000, maxConnections: MAX_CONNECTIONS },
  });
  // A route forced to throw: what a bug in a handler looks like from outside.
  app.get('/test-only/boom', { schema: { hide: true } }, () => {
    throw new Error('database exploded: /secret/path');
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as { port: number }).port;
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

function connect(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Resolves with what the server sent and how long after the start it closed the connection. */
function untilClosed(socket: Socket, started: number): Promise<{ ms: number; data: string }> {
  return new Promise((resolve) => {
    let data = '';
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
    });
    socket.on('error', () => {});
    socket.once('close', () => resolve({ ms: Date.now() - started, data }));
  });
}

describe('HTTP server limits', () => {
  it('cuts off a client that sends its headers slowly within the header timeout', async () => {
    const socket = await connect();
    const started = Date.now();
    const closed = untilClosed(socket, started);
    const head = `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ${'a'.repeat(200)}`;
    // One byte every 100 ms: the connection is never idle, the head never complete. Bounded at 20 s.
    let i = 0;
    const trickle = setInterval(() => {
      if (socket.destroyed || i >= head.length) return clearInterval(trickle);
      socket.write(head[i++]!);
    }, 100);
    const { ms, data } = await closed;
    clearInterval(trickle);
    expect(i).toBeLessThan(head.length); // cut before the trickle ran out
    expect(ms).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
    // The deadline is checked every quarter of the timeout; a busy machine gets a generous margin.
    expect(ms).toBeLessThan(HEADERS_TIMEOUT_MS + 2500);
    expect(data).toMatch(/^HTTP\/1\.1 408/);
  }, 20_000);

  it('refuses the connection over the cap and serves again once one closes', async () => {
    const held: Socket[] = [];
    try {
      for (let i = 0; i < MAX_CONNECTIONS; i++) held.push(await connect());
      // The server counts a connection once it accepted it.
      for (let i = 0; i < 100; i++) {
        const count = await new Promise<number>((r) => app.server.getConnections((_e, n) => r(n)));
        if (count >= MAX_CONNECTIONS) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const extra = await connect();
      const closed = untilClosed(extra, Date.now());
      extra.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      const { data } = await closed;
      expect(data).toBe(''); // dropped without an answer
      // The held ones still work.
      const first = held[0]!;
      const answer = new Promise<string>((resolve) => first.once('data', (c) => resolve(c.toString())));
      first.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(await answer).toMatch(/^HTTP\/1\.1 200/);
    } finally {
      for (const s of held) s.destroy();
    }
    for (let i = 0; i < 100; i++) {
      const count = await new Promise<number>((r) => app.server.getConnections((_e, n) => r(n)));
      if (count === 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  }, 20_000);
});

describe('security headers', () => {
  const expectSecurityHeaders = (res: Response) => {
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('server')).toBeNull();
    expect(res.headers.get('x-powered-by')).toBeNull();
  };
  const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };

  it('are on a 200, with no-store on /v1', async () => {
    const v1 = await fetch(`${base}/v1/load-balancers`, { headers: auth });
    expect(v1.status).toBe(200);
    expectSecurityHeaders(v1);
    expect(v1.headers.get('cache-control')).toBe('no-store');
    // The router decodes the path: `/%761/` is /v1/ too, and so is its cache policy.
    const encoded = await fetch(`${base}/%761/load-balancers`, { headers: auth });
    expect(encoded.status).toBe(200);
    expect(encoded.headers.get('cache-control')).toBe('no-store');
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expectSecurityHeaders(health);
  });

  it('are on 4xx answers, from a hook, a validation error and a bad URL', async () => {
    const unauthorized = await fetch(`${base}/v1/load-balancers`);
    expect(unauthorized.status).toBe(401);
    expectSecurityHeaders(unauthorized);
    expect(unauthorized.headers.get('cache-control')).toBe('no-store');
    const invalid = await fetch(`${base}/v1/load-balancers`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 5 }),
    });
    expect(invalid.status).toBe(400);
    expectSecurityHeaders(invalid);
    const badUrl = await fetch(`${base}/v1/load-balancers/%E0%A4%A`, { headers: auth });
    expect(badUrl.status).toBe(400);
    expectSecurityHeaders(badUrl);
  });

  it('are on a 404', async () => {
    const missing = await fetch(`${base}/no/such/route`);
    expect(missing.status).toBe(404);
    expectSecurityHeaders(missing);
    const missingV1 = await fetch(`${base}/v1/load-balancers/lb-00000000000000000000`, { headers: auth });
    expect(missingV1.status).toBe(404);
    expectSecurityHeaders(missingV1);
    expect(missingV1.headers.get('cache-control')).toBe('no-store');
  });
});

describe('request ids', () => {
  it('a 500 carries a generated request id in the header and the body, and the error log line has it', async () => {
    const res = await fetch(`${base}/test-only/boom`);
    expect(res.status).toBe(500);
    const id = res.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const body = (await res.json()) as { requestId?: string; detail: string; code: string };
    expect(body.code).toBe('internal');
    expect(body.requestId).toBe(id);
    expect(JSON.stringify(body)).not.toContain('/secret/path');
    const errorLines = logLines.map((l) => JSON.parse(l)).filter((l) => l.level === 50 && l.reqId === id);
    expect(errorLines).toHaveLength(1);
    expect(errorLines[0].err.message).toContain('database exploded');
  });

  it('keeps a short safe client id and replaces an unsafe one', async () => {
    const kept = await fetch(`${base}/test-only/boom`, { headers: { 'x-request-id': 'client-Abc_1.2' } });
    expect(kept.headers.get('x-request-id')).toBe('client-Abc_1.2');
    expect(((await kept.json()) as { requestId: string }).requestId).toBe('client-Abc_1.2');
    for (const unsafe of ['a'.repeat(65), 'has space', 'semi;colon', '']) {
      const res = await fetch(`${base}/test-only/boom`, { headers: { 'x-request-id': unsafe } });
      const id = res.headers.get('x-request-id');
      expect(id).not.toBe(unsafe);
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect(((await res.json()) as { requestId: string }).requestId).toBe(id);
    }
  });

  it('4xx answers carry no requestId in the body', async () => {
    const res = await fetch(`${base}/v1/load-balancers`);
    expect(res.status).toBe(401);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect((await res.json()) as object).not.toHaveProperty('requestId');
  });
});
