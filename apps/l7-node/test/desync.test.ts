import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createL7App, type L7App } from '../src/app.js';
import { id, listener, snapshot, startBackend, type TestBackend } from './helpers.js';
import { converse } from './raw-http.js';

// Desync across tenants: two tenants' listeners on one L7 node forward to the same backend address. Whatever
// the attacker's connection does (a Connection header naming a framing header, pipelining, a body the
// backend answers before reading, HEAD, 304, 1xx), the victim's next request must arrive alone and intact,
// and never on a backend connection the attacker's requests used. Run on both L7 paths.

const SECRET = 'session=victim-secret';

interface Seen {
  readonly url: string;
  readonly port: number;
  readonly cookie: string | undefined;
  body: string;
}

describe.each([
  ['fast path', true],
  ['node:http path', false],
])('desync across tenants (%s)', (_name, fastPath) => {
  let be: TestBackend;
  let app: L7App;
  let attacker: number;
  let victim: number;
  const seen: Seen[] = [];
  beforeAll(async () => {
    be = await startBackend('shared', (req: IncomingMessage, res) => {
      const s: Seen = { url: req.url ?? '', port: req.socket.remotePort ?? 0, cookie: req.headers.cookie, body: '' };
      seen.push(s);
      const url = req.url ?? '';
      if (url === '/early') {
        // Answers before reading the body: what is left of it must never be taken for a request.
        res.end('early');
        return;
      }
      if (url === '/head') {
        res.writeHead(200, { 'content-length': '1234' });
        res.end();
        return;
      }
      if (url === '/304') {
        res.writeHead(304, { etag: '"x"', 'content-length': '1234' });
        res.end();
        return;
      }
      if (url === '/interim') {
        res.writeEarlyHints({ link: '</a.css>; rel=preload' });
      }
      req.setEncoding('latin1');
      req.on('data', (d: string) => {
        s.body += d;
      });
      req.on('end', () => res.end(`${req.method} ${url}`));
    });
    const a = listener({ tenantId: id('tnt'), backends: [be.spec] });
    const b = listener({ tenantId: id('tnt'), backends: [{ ...be.spec, serverId: id('srv') }] });
    app = createL7App({ drainMs: 200, listener: { fastPath } });
    await app.apply(snapshot([a, b]));
    attacker = app.ports(a.id)!.direct!;
    victim = app.ports(b.id)!.direct!;
  });
  afterAll(async () => {
    await app.close();
    await be.close();
  });

  const victimRequest = 'GET /victim HTTP/1.1\r\nHost: h\r\nCookie: session=victim-secret\r\n\r\n';

  /** The victim's request after the attacker's: answered on its own, never inside another request. */
  async function victimUnharmed(): Promise<void> {
    const v = await converse(victim, victimRequest, 1);
    expect(v.responses[0]?.status).toBe(200);
    expect(v.responses[0]?.body.toString()).toBe('GET /victim');
    const mine = seen.filter((s) => s.url === '/victim');
    expect(mine.length).toBeGreaterThan(0);
    for (const s of seen) if (s.url !== '/victim') expect(`${s.body}${s.cookie ?? ''}`).not.toContain(SECRET);
  }

  const smuggled = 'POST /capture HTTP/1.1\r\nHost: h\r\nContent-Length: 200\r\n\r\ncaptured=';
  const cases: [string, string, number[]][] = [
    [
      'Connection: content-length',
      `POST / HTTP/1.1\r\nHost: h\r\nConnection: content-length\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
      [400],
    ],
    [
      'Connection: keep-alive, Content-Length',
      `POST / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Content-Length\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
      [400],
    ],
    [
      'Connection: transfer-encoding',
      `POST / HTTP/1.1\r\nHost: h\r\nConnection: transfer-encoding\r\nTransfer-Encoding: chunked\r\n\r\n${smuggled.length.toString(16)}\r\n${smuggled}\r\n0\r\n\r\n`,
      [400],
    ],
    [
      'pipelined requests',
      'GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\nGET /c HTTP/1.1\r\nHost: h\r\n\r\n',
      [200, 200, 200],
    ],
    [
      'a body the backend answers before reading',
      `POST /early HTTP/1.1\r\nHost: h\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
      [200],
    ],
    ['HEAD answered with a Content-Length', 'HEAD /head HTTP/1.1\r\nHost: h\r\n\r\n', [200]],
    ['304 with a Content-Length', 'GET /304 HTTP/1.1\r\nHost: h\r\n\r\n', [304]],
    ['a 103 before the answer', 'GET /interim HTTP/1.1\r\nHost: h\r\n\r\n', [200]],
  ];

  it.each(cases)('%s: the victim on another tenant is unharmed', async (_n, raw, statuses) => {
    const from = seen.length;
    const c = await converse(attacker, raw, statuses.length, { heads: [raw.startsWith('HEAD')] });
    expect(c.responses.map((r) => r.status)).toEqual(statuses);
    if (statuses[0] === 400) expect(seen.length).toBe(from);
    await victimUnharmed();
    expect(seen.map((s) => s.url)).not.toContain('/capture');
  });

  it('backend connections are never shared between two tenants’ listeners', async () => {
    const from = seen.length;
    for (let i = 0; i < 3; i++) {
      const a = await converse(attacker, `GET /a${i} HTTP/1.1\r\nHost: h\r\n\r\n`, 1);
      expect(a.responses[0]?.status).toBe(200);
      const v = await converse(victim, victimRequest, 1);
      expect(v.responses[0]?.status).toBe(200);
    }
    const mine = seen.slice(from);
    const attackerPorts = new Set(mine.filter((s) => s.url !== '/victim').map((s) => s.port));
    const victimPorts = mine.filter((s) => s.url === '/victim').map((s) => s.port);
    expect(victimPorts.length).toBe(3);
    // Keep-alive works within a listener (the pool is used) …
    expect(new Set(victimPorts).size).toBeLessThan(3);
    // … but never across listeners.
    for (const p of victimPorts) expect(attackerPorts.has(p)).toBe(false);
  });
});
