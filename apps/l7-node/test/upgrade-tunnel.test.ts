import { type ChildProcess, spawn } from 'node:child_process';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { id, listener, type Running, rawExchange, startApp } from './helpers.js';
import { type RawBackend, startRawBackend } from './raw-http.js';

// An Upgrade request becomes a tunnel only after a 101 that matches it. Any other answer is relayed as an
// ordinary response and the connection closes: what the client sends next never reaches the backend raw.
// The access log never holds the query string (WebSocket URLs often carry tokens). Both L7 paths (the
// fast path hands Upgrade requests to node:http).

function answerFor(head: string): string {
  const target = head.split(' ')[1] ?? '';
  if (target.startsWith('/ok')) return 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok';
  if (target.startsWith('/wrong-protocol'))
    return 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n';
  if (target.startsWith('/no-connection')) return 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n';
  if (target.startsWith('/switch'))
    return 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n';
  return 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n';
}

/** Sends an upgrade request, waits for the answer head, then sends `after`; collects until close or timeout. */
function upgradeThen(
  port: number,
  path: string,
  after: string,
  timeoutMs = 1500,
): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let sent = false;
    const s: Socket = connect(port, '127.0.0.1', () =>
      s.write(`GET ${path} HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n`),
    );
    const done = (closed: boolean) => {
      clearTimeout(timer);
      s.destroy();
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closed });
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    s.on('data', (d: Buffer) => {
      chunks.push(d);
      if (!sent && Buffer.concat(chunks).includes('\r\n\r\n')) {
        sent = true;
        // Written whether or not the node closes: a tunnel would carry it to the backend.
        s.write(after);
      }
    });
    s.on('error', () => done(true));
    s.on('close', () => done(true));
  });
}

describe.each([
  ['fast path', true],
  ['node:http path', false],
])('upgrade tunnel (%s)', (_name, fastPath) => {
  let be: RawBackend;
  let node: Running;
  const logLines: string[] = [];
  beforeAll(async () => {
    be = await startRawBackend((head) => answerFor(head));
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk, _enc, cb) {
          logLines.push(String(chunk));
          cb();
        },
      }),
    );
    node = await startApp(
      listener({
        backends: [{ serverId: id('srv'), address: '127.0.0.1', port: be.port, weight: 100, healthy: true }],
      }),
      { listener: { fastPath }, logger },
    );
  });
  afterAll(async () => {
    await node.app.close();
    await be.close();
  });

  const smuggle = 'GET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n';

  it('a 200 to an upgrade request is relayed as a response, then the connection closes untunnelled', async () => {
    const r = await upgradeThen(node.direct, '/ok', smuggle);
    expect(r.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(r.text.endsWith('\r\n\r\nok')).toBe(true);
    expect(r.text.toLowerCase()).toContain('connection: close');
    expect(r.closed).toBe(true);
    expect(be.heads.some((h) => h.startsWith('GET /smuggled'))).toBe(false);
  });

  it.each(['/wrong-protocol', '/no-connection'])(
    'a 101 that does not match the request (%s) is a 502, no tunnel',
    async (path) => {
      const r = await upgradeThen(node.direct, path, smuggle);
      expect(r.text).toMatch(/^HTTP\/1\.1 502 /);
      expect(r.closed).toBe(true);
      expect(be.heads.some((h) => h.startsWith('GET /smuggled'))).toBe(false);
    },
  );

  it('a matching 101 opens the tunnel', async () => {
    const r = await upgradeThen(node.direct, '/switch', 'GET /through-tunnel HTTP/1.1\r\nHost: h\r\n\r\n', 800);
    expect(r.text).toMatch(/^HTTP\/1\.1 101 /);
    // The raw backend answers whatever arrives: through a tunnel that is the 404 of its default answer.
    expect(r.text).toContain('404 Not Found');
    expect(be.heads.some((h) => h.startsWith('GET /through-tunnel'))).toBe(true);
  });

  it('the access log leaves the query string out', async () => {
    await upgradeThen(node.direct, '/switch?token=sekrit', '', 500);
    await vi.waitFor(() => expect(logLines.filter((l) => l.includes('"upgrade"')).length).toBeGreaterThan(0));
    expect(logLines.join('')).not.toContain('sekrit');
  });
});

/**
 * A backend that never completes a connect: a listening socket (python, which can listen without ever
 * accepting) whose one-slot accept queue is filled, so the kernel drops further SYNs.
 */
async function blackHole(): Promise<{ port: number; close(): void }> {
  const py: ChildProcess = spawn('python3', [
    '-c',
    "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(60)",
  ]);
  const port = await new Promise<number>((resolve) =>
    py.stdout!.once('data', (d) => resolve(Number(String(d).trim()))),
  );
  const held: Socket[] = [];
  // Fill the accept queue (bounded): once a connect hangs, the queue is full.
  for (let i = 0; i < 4; i++) {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => {});
    held.push(s);
    const done = await new Promise<boolean>((r) => {
      s.once('connect', () => r(true));
      setTimeout(() => r(false), 300);
    });
    if (!done) break;
  }
  return {
    port,
    close: () => {
      for (const s of held) s.destroy();
      py.kill();
    },
  };
}

describe('upgrade connect timeout', () => {
  it('a backend that never takes the connection is a 502 after the connect timeout, not a hang', async () => {
    const hole = await blackHole();
    const node = await startApp(
      listener({
        backends: [{ serverId: id('srv'), address: '127.0.0.1', port: hole.port, weight: 100, healthy: true }],
      }),
      { pools: { connectTimeoutMs: 300 } },
    );
    try {
      const started = Date.now();
      const answer = await rawExchange(
        node.direct,
        'GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
        5000,
      );
      expect(answer).toMatch(/^HTTP\/1\.1 502 /);
      expect(Date.now() - started).toBeLessThan(4000);
    } finally {
      await node.app.close();
      hole.close();
    }
  });

  it('a backend that takes the connection but never answers the upgrade is a 504 after the request timeout', async () => {
    const held: Socket[] = [];
    const silent = createServer((s) => held.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as AddressInfo).port;
    const node = await startApp(
      listener({
        requestTimeout: 1,
        backends: [{ serverId: id('srv'), address: '127.0.0.1', port, weight: 100, healthy: true }],
      }),
    );
    try {
      const started = Date.now();
      const answer = await rawExchange(
        node.direct,
        'GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
        5000,
      );
      expect(answer).toMatch(/^HTTP\/1\.1 504 /);
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await node.app.close();
      for (const s of held) s.destroy();
      silent.close();
    }
  });
});
