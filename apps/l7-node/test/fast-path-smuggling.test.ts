import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listener, type Running, rawExchange, startApp, startBackend, type TestBackend } from './helpers.js';
import { converse } from './raw-http.js';

// The fast path never forwards what it is not sure of: ambiguous or malformed requests go to node:http,
// which answers 400; an oversize head is a 431. Also after a valid request on the same connection, where
// the fast path has to hand over mid-connection.

const attacks: [string, string][] = [
  [
    'Content-Length with Transfer-Encoding',
    'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n',
  ],
  ['duplicate Content-Length', 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 30\r\n\r\nabc'],
  ['Content-Length list', 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\nabc'],
  ['invalid header name', 'GET / HTTP/1.1\r\nHost: h\r\nBad\x01Name: x\r\n\r\n'],
  ['space before colon', 'GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n'],
  ['obs-fold', 'GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n Transfer-Encoding: chunked\r\n\r\n'],
  ['bare LF line endings', 'GET / HTTP/1.1\nHost: h\nX-A: a\n\n'],
  ['bare LF inside a head', 'GET / HTTP/1.1\r\nHost: h\nContent-Length: 5\r\n\r\n'],
  ['bare CR in a value', 'GET / HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n'],
  ['authority-form target', 'GET h:80 HTTP/1.1\r\nHost: h\r\n\r\n'],
];

// Well-formed, but refused by the node's own rules (RFC 9110 §7.6.1, one Host, target and Host agree):
// node:http parses them, so on both paths a valid request before them on the connection is answered first.
const refused: [string, string][] = [
  [
    'Connection naming Content-Length',
    'POST / HTTP/1.1\r\nHost: h\r\nConnection: Content-Length\r\nContent-Length: 35\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n',
  ],
  [
    'Connection naming Transfer-Encoding',
    'POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: transfer-encoding\r\n\r\n0\r\n\r\n',
  ],
  ['two Host headers', 'GET / HTTP/1.1\r\nHost: h\r\nHost: other\r\n\r\n'],
  ['absolute-form target naming another host', 'GET http://other/ HTTP/1.1\r\nHost: h\r\n\r\n'],
];

describe.each([
  ['fast path', true],
  ['node:http path', false],
])('smuggling (%s)', (_name, fastPath) => {
  let be: TestBackend;
  let node: Running;
  beforeAll(async () => {
    be = await startBackend('victim');
    node = await startApp(listener({ backends: [be.spec] }), { listener: { maxHeaderSize: 8192, fastPath } });
  });
  afterAll(async () => {
    await node.app.close();
    await be.close();
  });

  it.each(attacks)('%s → 400, backend untouched', async (_n, raw) => {
    const seen = be.requests.length;
    const answer = await rawExchange(node.direct, raw);
    expect(answer.startsWith('HTTP/1.1 400 ')).toBe(true);
    expect(be.requests.length).toBe(seen);
  });

  // node:http parses the whole pipeline at once and answers only the 400; the fast path answers the valid
  // request first, then hands the rest to node:http.
  it.each(attacks)('%s after a valid request on the same connection → 400 and nothing smuggled', async (_n, raw) => {
    const seen = be.requests.length;
    const c = await converse(node.direct, `GET /first HTTP/1.1\r\nHost: h\r\n\r\n${raw}`, 2);
    expect(c.responses.map((r) => r.status)).toEqual(fastPath ? [200, 400] : [400]);
    expect(be.requests.slice(seen).map((r) => r.url)).toEqual(
      fastPath ? ['/first'] : be.requests.slice(seen).map(() => '/first'),
    );
  });

  it.each(refused)('%s → 400, backend untouched', async (_n, raw) => {
    const seen = be.requests.length;
    const answer = await rawExchange(node.direct, raw);
    expect(answer.startsWith('HTTP/1.1 400 ')).toBe(true);
    expect(be.requests.length).toBe(seen);
  });

  it.each(refused)('%s after a valid request → 200 then 400, nothing smuggled', async (_n, raw) => {
    const seen = be.requests.length;
    const c = await converse(node.direct, `GET /first HTTP/1.1\r\nHost: h\r\n\r\n${raw}`, 2);
    expect(c.responses.map((r) => r.status)).toEqual([200, 400]);
    expect(be.requests.slice(seen).map((r) => r.url)).toEqual(['/first']);
  });

  it('an absolute-form target naming the Host is sent in origin-form', async () => {
    const answer = await rawExchange(
      node.direct,
      'GET http://h/abs?q=1 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n',
    );
    expect(answer.startsWith('HTTP/1.1 200 ')).toBe(true);
    expect(be.requests.at(-1)?.url).toBe('/abs?q=1');
  });

  it('oversize head → 431, backend untouched', async () => {
    const seen = be.requests.length;
    const answer = await rawExchange(node.direct, `GET / HTTP/1.1\r\nHost: h\r\nX-Big: ${'a'.repeat(10_000)}\r\n\r\n`);
    expect(answer.startsWith('HTTP/1.1 431 ')).toBe(true);
    expect(be.requests.length).toBe(seen);
  });

  it('oversize head still arriving → 431 without waiting for its end', async () => {
    const answer = await rawExchange(node.direct, `GET / HTTP/1.1\r\nHost: h\r\nX-Big: ${'a'.repeat(10_000)}`, 2000);
    expect(answer.startsWith('HTTP/1.1 431 ')).toBe(true);
  });

  it('HTTP/1.0 is still served (by node:http)', async () => {
    const answer = await rawExchange(node.direct, 'GET /old HTTP/1.0\r\nHost: h\r\n\r\n');
    expect(answer.startsWith('HTTP/1.1 200 ')).toBe(true);
    expect(be.requests.at(-1)?.url).toBe('/old');
  });
});
