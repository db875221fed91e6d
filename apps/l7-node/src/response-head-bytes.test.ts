import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../test/seeded-random.js';
import { responseHeadersToClient, serializeHead } from './headers.js';
import { parseResponseHead } from './http1-parser.js';
import { scanResponseHead, writeResponseHead } from './response-head-bytes.js';

// The byte path is held to the string path, which stays the rule: on every head the byte path takes, both must
// read the same framing and keep-alive, and write the client the same bytes.

/** The head with its CRLF CRLF and bytes after it (a body, the next message), as a read brings it. */
const scan = (head: string) => {
  const h = scanResponseHead(Buffer.from(`${head}\r\n\r\nxy\r\n\r\n`, 'latin1'));
  if (h !== null) expect(h.end).toBe(head.length);
  return h;
};

/** The string path's head for the client, with `extra` added as the exchange adds its lines. */
function stringPath(head: string, extra: string[], body: string): string | null {
  const p = parseResponseHead(head);
  if (p === null) return null;
  const { headers } = responseHeadersToClient(p.headers, true);
  return serializeHead(`HTTP/1.1 ${p.status} ${p.reason}`, [...headers, ...extra]) + body;
}

/** Deterministic response heads from pieces on the rules' edges. */
function* generatedHeads(count: number): Generator<string> {
  const rand = seededRandom(0xb17e5);
  const pick = <T>(xs: T[]) => xs[rand(xs.length)]!;
  const statusLines = [
    'HTTP/1.1 200 OK',
    'HTTP/1.1 200 OK',
    'HTTP/1.0 200 OK',
    'HTTP/1.1 204',
    'HTTP/1.1 404 Not\tFound caf\xe9',
    'HTTP/1.1 100 Continue',
    'HTTP/1.1 304 Not Modified',
    'HTTP/1.1 200 O\x01K',
    'HTTP/1.2 200 OK',
    'HTTP/1.1 20 OK',
    'http/1.1 200 OK',
    'HTTP/1.1 200 ',
  ];
  const fields: [string, string[]][] = [
    ['Server', ['nginx', ' nginx ', '']],
    ['Content-Length', ['2', ' 2 ', '0', '12', 'x', '', '1234567890123456', '+2']],
    ['content-LENGTH', ['2', '3']],
    ['Transfer-Encoding', ['chunked', 'Chunked', ' chunked ,', 'gzip, chunked', 'chunked, chunked', ',', '']],
    ['Connection', ['keep-alive', 'close', 'Keep-Alive, Close', 'close, x-a', 'upgrade', ' , ', 'closed', '']],
    ['Keep-Alive', ['timeout=5']],
    ['Proxy-Connection', ['close']],
    ['TE', ['trailers']],
    ['Trailer', ['X-T']],
    ['Upgrade', ['h2c']],
    ['HTTP2-Settings', ['x']],
    ['Set-Cookie', ['a=1; Path=/', ' b=2 ', '']],
    ['X-A', ['a', 'caf\xe9', 'a\rb', 'a\x00b', '\t']],
    ['Bad Name', ['x']],
    ['X\x80', ['x']],
  ];
  const joins = ['\r\n', '\r\n', '\r\n', '\r\n', '\r\n', '\n', '\r\n '];
  const colons = [':', ': ', ':\t', ' :'];
  for (let k = 0; k < count; k++) {
    let head = pick(statusLines);
    const n = rand(6);
    for (let i = 0; i < n; i++) {
      const [name, values] = pick(fields);
      head += pick(joins) + name + pick(colons) + pick(values);
    }
    yield head;
  }
}

describe('scanResponseHead and writeResponseHead', () => {
  it('read and write what the string path does, on 20,000 generated heads', () => {
    const extras = [[], ['content-length', '2'], ['transfer-encoding', 'chunked', 'connection', 'close']];
    let taken = 0;
    let fellBack = 0;
    let k = 0;
    for (const head of generatedHeads(20000)) {
      const h = scan(head);
      const p = parseResponseHead(head);
      if (h === null) {
        if (p !== null) fellBack++;
        continue;
      }
      taken++;
      const what = JSON.stringify(head);
      expect(p, what).not.toBeNull();
      expect(p!.status, what).toBeGreaterThanOrEqual(200);
      expect(
        { status: h.status, contentLength: h.contentLength, chunked: h.chunked, keepAlive: h.keepAlive },
        what,
      ).toEqual({ status: p!.status, contentLength: p!.contentLength, chunked: p!.chunked, keepAlive: p!.keepAlive });
      expect(h.setCookies, what).toEqual(responseHeadersToClient(p!.headers, true).setCookies);
      const extra = extras[k++ % extras.length]!;
      const body = k % 2 === 0 ? 'ok' : '';
      h.extra.push(...extra);
      // The body sits in a larger read, as it does on the fast path.
      const read = Buffer.from(`xx${body}yy`, 'latin1');
      const bytes = writeResponseHead(h, read, 2, 2 + body.length);
      expect(bytes.toString('latin1'), what).toBe(stringPath(head, extra, body));
    }
    // Both paths were exercised: heads the byte path takes, and valid ones it leaves to the string path.
    expect(taken).toBeGreaterThan(2500);
    expect(fellBack).toBeGreaterThan(500);
  });

  it('copies an nginx head as one range, dropping Content-Length and Connection', () => {
    const head = 'HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: x\r\nContent-Length: 2\r\nConnection: keep-alive';
    const h = scan(head)!;
    expect(h).toMatchObject({ status: 200, contentLength: 2, chunked: false, keepAlive: true });
    expect(h.ranges).toEqual([17, 17 + 'Server: nginx\r\nDate: x\r\n'.length]);
    h.extra.push('content-length', '2');
    expect(writeResponseHead(h, Buffer.from('ok'), 0, 2).toString('latin1')).toBe(
      'HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: x\r\ncontent-length: 2\r\n\r\nok',
    );
  });

  const stringOnly: [string, string][] = [
    ['a 1xx', 'HTTP/1.1 103 Early Hints\r\nLink: </a>'],
    ['a Connection option naming a header', 'HTTP/1.1 200 OK\r\nX-A: 1\r\nConnection: x-a'],
    ['two equal Content-Lengths', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2'],
    ['two Transfer-Encodings', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked'],
    ['a coding under chunked', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked'],
    ['Content-Length next to chunked', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked'],
    ['obs-fold', 'HTTP/1.1 200 OK\r\nX-A: a\r\n b'],
    ['a bare LF', 'HTTP/1.1 200 OK\nX-A: a'],
    ['HTTP/2', 'HTTP/2 200 OK'],
  ];
  it.each(stringOnly)('leaves %s to the string path', (_name, head) => {
    expect(scan(head)).toBeNull();
  });

  it('takes a head only once it is whole: never from a prefix of it', () => {
    const whole = Buffer.from('HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 2\r\n\r\nok', 'latin1');
    const end = whole.indexOf('\r\n\r\n');
    for (let n = 0; n < end + 4; n++) expect(scanResponseHead(whole.subarray(0, n)), `${n} bytes`).toBeNull();
    expect(scanResponseHead(whole.subarray(0, end + 4))?.end).toBe(end);
    expect(scanResponseHead(Buffer.from('HTTP/1.1 204\r\n\r\n', 'latin1'))).toMatchObject({ end: 12, statusEnd: 12 });
  });

  it('reads keep-alive from the version and Connection: close', () => {
    expect(scan('HTTP/1.0 200 OK\r\nContent-Length: 1')?.keepAlive).toBe(false);
    expect(scan('HTTP/1.1 200 OK\r\nConnection: Keep-Alive, CLOSE')?.keepAlive).toBe(false);
    expect(scan('HTTP/1.1 200 OK\r\nConnection: keep-alive')?.keepAlive).toBe(true);
    expect(scan('HTTP/1.1 204\r\nServer: x')).toMatchObject({ status: 204, keepAlive: true, statusEnd: 12 });
  });
});
