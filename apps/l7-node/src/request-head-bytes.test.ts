import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../test/seeded-random.js';
import { type ForwardingInfo, requestHeadersToBackend, serializeHead } from './headers.js';
import { parseRequestHead } from './http1-parser.js';
import { type BytesRequestHead, forwardingLines, scanRequestHead, writeRequestHead } from './request-head-bytes.js';

// The byte path is held to the string path, which stays the rule: on every head the byte path takes, the string
// path must serve it too (not hand it to node:http, not refuse it), read the same facts, and send the backend
// the same bytes.

/** The head with its CRLF CRLF and bytes after it (a body, the next message), as a read brings it. */
const scan = (head: string) => {
  const h = scanRequestHead(Buffer.from(`${head}\r\n\r\nxy\r\n\r\n`, 'latin1'));
  if (h !== null) expect(h.end).toBe(head.length);
  return h;
};
const write = (h: BytesRequestHead, fwd: ForwardingInfo) => writeRequestHead(h, forwardingLines(fwd, h.clientXff));
const fwds: ForwardingInfo[] = [
  { clientAddress: '10.0.0.7', proto: 'http', frontendPort: 80, xff: 'replace' },
  { clientAddress: '10.0.0.7', proto: 'https', frontendPort: 8443, xff: 'append' },
  { clientAddress: '::1', proto: 'http', frontendPort: 8080, xff: 'off' },
];

/** Deterministic request heads from pieces on the rules' edges. */
function* generatedHeads(count: number): Generator<string> {
  const rand = seededRandom(0x4e0);
  const pick = <T>(xs: T[]) => xs[rand(xs.length)]!;
  const requestLines = [
    'GET / HTTP/1.1',
    'GET /a?b=c HTTP/1.1',
    'POST /upload HTTP/1.1',
    'PATCH /x HTTP/1.1',
    "M-!#$%&'*+.^_`|~ /%7e HTTP/1.1",
    'GET / HTTP/1.0',
    'GET http://h/ HTTP/1.1',
    'GET  / HTTP/1.1',
    'GET /caf\xe9 HTTP/1.1',
    'GET / HTTP/1.1 ',
    'G\x00T / HTTP/1.1',
    'GET / http/1.1',
  ];
  const fields: [string, string[]][] = [
    ['Host', ['h', 'example.com:8080', '', ' h ']],
    ['host', ['h']],
    ['Cookie', ['a=1', 'SERVERID=x; b=2', '']],
    ['Content-Length', ['0', '5', ' 5 ', 'x', '', '1234567890123456']],
    ['Connection', ['keep-alive', 'close', 'Keep-Alive, CLOSE', 'x-a', 'upgrade', 'content-length', ' , ']],
    ['X-Forwarded-For', ['1.2.3.4', '5.6.7.8, 9.9.9.9', '']],
    ['X-Forwarded-Proto', ['https']],
    ['X-Forwarded-Port', ['1']],
    ['X-Forwarded-Host', ['evil']],
    ['X-Real-IP', ['1.1.1.1']],
    ['Forwarded', ['for=1.1.1.1']],
    ['X-Client-IP', ['1']],
    ['True-Client-IP', ['1']],
    ['Keep-Alive', ['timeout=5']],
    ['Proxy-Connection', ['close']],
    ['TE', ['trailers']],
    ['Trailer', ['X-T']],
    ['HTTP2-Settings', ['x']],
    ['Expect', ['100-continue']],
    ['Upgrade', ['websocket']],
    ['Transfer-Encoding', ['chunked']],
    ['X-A', ['1']],
    ['User-Agent', ['wrk', 'caf\xe9', 'a\x00b', '\t']],
    ['Accept', ['*/*']],
    ['Bad Name', ['x']],
  ];
  const joins = ['\r\n', '\r\n', '\r\n', '\r\n', '\r\n', '\n', '\r\n '];
  const colons = [': ', ': ', ':', ':\t', ' :'];
  for (let k = 0; k < count; k++) {
    let head = pick(requestLines);
    const n = rand(6);
    for (let i = 0; i < n; i++) {
      const [name, values] = pick(fields);
      head += pick(joins) + name + pick(colons) + pick(values);
    }
    if (rand(3) > 0) head += '\r\nHost: h';
    yield head;
  }
}

describe('scanRequestHead and writeRequestHead', () => {
  it('read and write what the string path does, on 20,000 generated heads', () => {
    let taken = 0;
    let fellBack = 0;
    let k = 0;
    for (const head of generatedHeads(20000)) {
      const h = scan(head);
      const p = parseRequestHead(head);
      if (h === null) {
        if (p.fast) fellBack++;
        continue;
      }
      taken++;
      const what = JSON.stringify(head);
      expect(p.fast, what).toBe(true);
      if (!p.fast) continue;
      const { headers, ...facts } = p.head;
      expect(
        {
          method: h.method,
          target: h.target,
          contentLength: h.contentLength,
          host: h.host,
          cookie: h.cookie,
          close: h.close,
        },
        what,
      ).toEqual(facts);
      const fwd = fwds[k++ % fwds.length]!;
      const rewritten = requestHeadersToBackend(headers, fwd);
      expect(rewritten, what).not.toBeNull();
      const expected = serializeHead(`${p.head.method} ${p.head.target} HTTP/1.1`, rewritten!);
      expect(write(h, fwd).toString('latin1'), what).toBe(expected);
    }
    // Both paths were exercised: heads the byte path takes, and servable ones it leaves to the string path.
    expect(taken).toBeGreaterThan(1000);
    expect(fellBack).toBeGreaterThan(100);
  });

  it("copies wrk's head and adds the forwarding lines", () => {
    const head = 'GET /ok HTTP/1.1\r\nHost: 127.0.0.1:18200';
    const h = scan(head)!;
    expect(h).toMatchObject({ method: 'GET', target: '/ok', host: '127.0.0.1:18200', contentLength: 0, close: false });
    expect(write(h, fwds[0]!).toString('latin1')).toBe(
      'GET /ok HTTP/1.1\r\nHost: 127.0.0.1:18200\r\nx-forwarded-for: 10.0.0.7\r\nx-forwarded-proto: http\r\n' +
        'x-forwarded-port: 80\r\nx-real-ip: 10.0.0.7\r\n\r\n',
    );
  });

  it("keeps the client's X-Forwarded-For in front of its address in append mode only", () => {
    const h = scan('GET / HTTP/1.1\r\nX-Forwarded-For: 1.1.1.1\r\nHost: h\r\nX-Forwarded-For: 2.2.2.2')!;
    expect(write(h, fwds[1]!).toString('latin1')).toContain('\r\nx-forwarded-for: 1.1.1.1, 2.2.2.2, 10.0.0.7\r\n');
    expect(write(h, fwds[0]!).toString('latin1')).not.toContain('1.1.1.1');
  });

  it('takes a head only once it is whole: never from a prefix of it', () => {
    const whole = Buffer.from('POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nok', 'latin1');
    const end = whole.indexOf('\r\n\r\n');
    for (let n = 0; n < end + 4; n++) expect(scanRequestHead(whole.subarray(0, n)), `${n} bytes`).toBeNull();
    expect(scanRequestHead(whole.subarray(0, end + 4))).toMatchObject({ end, contentLength: 2, method: 'POST' });
  });

  const stringOnly: [string, string][] = [
    ['HTTP/1.0', 'GET / HTTP/1.0\r\nHost: h'],
    ['no Host', 'GET / HTTP/1.1\r\nX-A: 1'],
    ['two Hosts', 'GET / HTTP/1.1\r\nHost: a\r\nHost: b'],
    ['Expect', 'POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1'],
    ['Upgrade', 'GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: websocket'],
    ['Transfer-Encoding', 'POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked'],
    ['a Connection option naming a header', 'GET / HTTP/1.1\r\nHost: h\r\nConnection: x-a\r\nX-A: 1'],
    ['Connection naming Content-Length', 'GET / HTTP/1.1\r\nHost: h\r\nConnection: content-length'],
    ['two Content-Lengths', 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1'],
    ['an absolute target', 'GET http://h/ HTTP/1.1\r\nHost: h'],
    ['obs-fold', 'GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n b'],
    ['a bare LF', 'GET / HTTP/1.1\nHost: h'],
  ];
  it.each(stringOnly)('leaves %s to the string path', (_name, head) => {
    expect(scan(head)).toBeNull();
  });
});
