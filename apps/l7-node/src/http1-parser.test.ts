import { describe, expect, it } from 'vitest';
import { seededRandom } from '../test/seeded-random.js';
import { ChunkedFramer, parseRequestHead, parseResponseHead } from './http1-parser.js';

// The field lines are checked by one scan with tables; this is the rule they implement, as the regex per
// line the parser used before, so any head on which the two disagree fails below.
// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing CTLs is the point
const FIELD_LINE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[^\x00-\x08\x0a-\x1f\x7f]*$/;
const trim = (v: string) => v.replace(/^[ \t]+|[ \t]+$/g, '');
/** The field lines of `head` by the rule, as [name, value, …]; null when one breaks it. */
function referenceFields(head: string): string[] | null {
  const out: string[] = [];
  for (const line of head.split('\r\n').slice(1)) {
    if (!FIELD_LINE.test(line)) return null;
    const colon = line.indexOf(':');
    out.push(line.slice(0, colon), trim(line.slice(colon + 1)));
  }
  return out;
}

/** Deterministic heads built from pieces that sit on the rule's edges. */
function* generatedHeads(first: string[], count: number): Generator<string> {
  const rand = seededRandom(0x5eed);
  const pick = <T>(xs: T[]) => xs[rand(xs.length)]!;
  const names = [
    'Host',
    'Content-Length',
    'X-A',
    'Transfer-Encoding',
    'Connection',
    'Cookie',
    'a',
    '',
    'Bad Name',
    'X\x80',
    "!#$%&'*+-.^_`|~",
  ];
  const colons = [':', ' :', ': ', ':\t', '::', ''];
  const values = [
    'v',
    ' v ',
    '\tv\t',
    'a\rb',
    'a\nb',
    'a\x00b',
    'a\x7fb',
    'caf\xe9',
    '',
    '12',
    'close',
    'chunked',
    ' ',
    '\x0b',
  ];
  const joins = ['\r\n', '\r\n', '\r\n', '\n', '\r', '\r\n ', '\r\n\t', '\r\n\r\n'];
  for (let k = 0; k < count; k++) {
    let head = pick(first);
    const lines = rand(5);
    for (let l = 0; l < lines; l++) head += pick(joins) + pick(names) + pick(colons) + pick(values);
    if (rand(8) === 0) head += pick(joins);
    yield head;
  }
}

describe('parseRequestHead', () => {
  it('parses a plain GET', () => {
    const r = parseRequestHead('GET /a?b=1 HTTP/1.1\r\nHost: example.com\r\nCookie: a=1\r\nX-T:  v \t');
    expect(r).toEqual({
      fast: true,
      head: {
        method: 'GET',
        target: '/a?b=1',
        headers: ['Host', 'example.com', 'Cookie', 'a=1', 'X-T', 'v'],
        contentLength: 0,
        host: 'example.com',
        cookie: ['a=1'],
        close: false,
      },
    });
  });

  it('reads Content-Length and Connection: close', () => {
    const r = parseRequestHead('POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\nConnection: keep-alive, Close');
    expect(r.fast && r.head.contentLength).toBe(12);
    expect(r.fast && r.head.close).toBe(true);
  });

  it('keeps bytes 0x80-0xff in values (obs-text)', () => {
    const r = parseRequestHead('GET / HTTP/1.1\r\nHost: h\r\nX-Name: caf\xe9');
    expect(r.fast && r.head.headers[3]).toBe('caf\xe9');
  });

  // Refused by the strict parser or not for the fast path: node:http decides (and answers 400 to the bad ones).
  const fallbacks: [string, string][] = [
    ['HTTP/1.0', 'GET / HTTP/1.0\r\nHost: h'],
    ['absolute-form target', 'GET http://h/ HTTP/1.1\r\nHost: h'],
    ['asterisk target', 'OPTIONS * HTTP/1.1\r\nHost: h'],
    ['CONNECT', 'CONNECT h:443 HTTP/1.1\r\nHost: h'],
    ['space in target', 'GET /a b HTTP/1.1\r\nHost: h'],
    ['control byte in target', 'GET /a\x01 HTTP/1.1\r\nHost: h'],
    ['bad method', 'G(T / HTTP/1.1\r\nHost: h'],
    ['double space', 'GET  / HTTP/1.1\r\nHost: h'],
    ['lower-case version', 'GET / http/1.1\r\nHost: h'],
    ['Transfer-Encoding', 'POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked'],
    ['CL and TE', 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nTransfer-Encoding: chunked'],
    ['duplicate Content-Length', 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 3'],
    ['Content-Length not digits', 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +3'],
    ['Content-Length list', 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3'],
    ['huge Content-Length', `POST / HTTP/1.1\r\nHost: h\r\nContent-Length: ${'9'.repeat(16)}`],
    ['no Host', 'GET / HTTP/1.1\r\nX: y'],
    ['two Hosts', 'GET / HTTP/1.1\r\nHost: a\r\nHost: b'],
    ['Upgrade', 'GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket'],
    ['Connection: upgrade', 'GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade'],
    ['Expect', 'POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1'],
    ['space in header name', 'GET / HTTP/1.1\r\nHost: h\r\nBad Name: x'],
    ['space before colon', 'GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked'],
    ['obs-fold', 'GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n b'],
    ['bare LF in a field', 'GET / HTTP/1.1\r\nHost: h\nX-A: a'],
    ['bare CR in a value', 'GET / HTTP/1.1\r\nHost: h\r\nX-A: a\rb'],
    ['NUL in a value', 'GET / HTTP/1.1\r\nHost: h\r\nX-A: a\x00b'],
    ['empty name', 'GET / HTTP/1.1\r\nHost: h\r\n: x'],
    ['no colon', 'GET / HTTP/1.1\r\nHost: h\r\nX-A'],
  ];
  it.each(fallbacks)('%s → node:http', (_name, head) => {
    expect(parseRequestHead(head).fast).toBe(false);
  });
});

describe('parseResponseHead', () => {
  it('parses status, reason, framing and keep-alive', () => {
    expect(parseResponseHead('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: b')).toEqual({
      status: 200,
      reason: 'OK',
      headers: ['Content-Length', '2', 'X-A', 'b'],
      contentLength: 2,
      chunked: false,
      keepAlive: true,
    });
    expect(parseResponseHead('HTTP/1.1 204')?.reason).toBe('');
    expect(parseResponseHead('HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked')?.chunked).toBe(true);
    expect(parseResponseHead('HTTP/1.1 200 OK\r\nConnection: close')?.keepAlive).toBe(false);
    expect(parseResponseHead('HTTP/1.0 200 OK\r\nContent-Length: 1')?.keepAlive).toBe(false);
    expect(parseResponseHead('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2')?.contentLength).toBe(2);
  });

  const refused: [string, string][] = [
    ['HTTP/2 status line', 'HTTP/2 200 OK'],
    ['two-digit status', 'HTTP/1.1 20 OK'],
    ['status 099', 'HTTP/1.1 099 X'],
    ['differing Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3'],
    ['Content-Length with TE', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked'],
    ['gzip, chunked', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked'],
    ['TE not chunked', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip'],
    ['bad header name', 'HTTP/1.1 200 OK\r\nBad Name: x'],
    ['obs-fold', 'HTTP/1.1 200 OK\r\nX-A: a\r\n b'],
    ['bare LF', 'HTTP/1.1 200 OK\nX-A: a'],
    ['CTL in reason', 'HTTP/1.1 200 O\x01K'],
  ];
  it.each(refused)('%s → null', (_name, head) => {
    expect(parseResponseHead(head)).toBeNull();
  });
});

describe('the field-line scan', () => {
  it('accepts and splits exactly what the rule does, on 5,000 generated request and response heads', () => {
    let accepted = 0;
    for (const head of generatedHeads(['GET / HTTP/1.1', 'HTTP/1.1 200 OK', 'HTTP/1.1 204'], 5000)) {
      const fields = referenceFields(head);
      const isResponse = head.startsWith('HTTP/');
      if (isResponse) {
        const r = parseResponseHead(head);
        if (fields === null) expect(r, JSON.stringify(head)).toBeNull();
        else if (r !== null) expect(r.headers, JSON.stringify(head)).toEqual(fields);
      } else {
        const r = parseRequestHead(head);
        if (fields === null) expect(r.fast, JSON.stringify(head)).toBe(false);
        else if (r.fast) expect(r.head.headers, JSON.stringify(head)).toEqual(fields);
        else expect(r.why, JSON.stringify(head)).not.toBe('field line');
      }
      if (fields !== null) accepted++;
    }
    // Both sides of the rule were exercised.
    expect(accepted).toBeGreaterThan(500);
    expect(accepted).toBeLessThan(4500);
  });

  it('splits a head whose only field line has an empty value, and refuses a trailing CRLF', () => {
    expect(parseResponseHead('HTTP/1.1 200 OK\r\nX-Empty:')?.headers).toEqual(['X-Empty', '']);
    expect(parseResponseHead('HTTP/1.1 200 OK\r\n')).toBeNull();
    expect(parseResponseHead('HTTP/1.1 200 OK\r\nX-A: b\r\n')).toBeNull();
  });
});

describe('ChunkedFramer', () => {
  const body = Buffer.from(
    '5;ext=1\r\nhello\r\na\r\n0123456789\r\nA \r\n0123456789\r\n0\r\nX-Trailer: t\r\nY: u\r\n\r\n',
    'latin1',
  );

  it('finds the end in one buffer, leaving what follows', () => {
    const f = new ChunkedFramer();
    const withNext = Buffer.concat([body, Buffer.from('HTTP/1.1 200 OK\r\n')]);
    expect(f.feed(withNext)).toBe(body.length);
    expect(f.done).toBe(true);
  });

  it('fed byte by byte ends exactly on the last byte', () => {
    const f = new ChunkedFramer();
    for (let i = 0; i < body.length - 1; i++) expect(f.feed(body.subarray(i, i + 1))).toBe(-1);
    expect(f.feed(body.subarray(body.length - 1))).toBe(1);
  });

  it('fed in random splits ends at the same place', () => {
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let round = 0; round < 200; round++) {
      const f = new ChunkedFramer();
      let at = 0;
      let end = -1;
      while (at < body.length) {
        const n = 1 + Math.floor(rnd() * 12);
        const piece = body.subarray(at, Math.min(body.length, at + n));
        const r = f.feed(piece);
        expect(r).not.toBe(-2);
        if (r >= 0) {
          end = at + r;
          break;
        }
        at += piece.length;
      }
      expect(end).toBe(body.length);
    }
  });

  it('handles an offset into the buffer', () => {
    const f = new ChunkedFramer();
    const buf = Buffer.concat([Buffer.from('HEAD'), Buffer.from('0\r\n\r\n')]);
    expect(f.feed(buf, 4)).toBe(buf.length);
  });

  const bad: [string, string][] = [
    ['no size', '\r\n'],
    ['non-hex size', 'g\r\n'],
    ['bare LF after size', '5\nhello\r\n'],
    ['missing CRLF after data', '5\r\nhelloX'],
    ['size overflow', `${'f'.repeat(13)}\r\n`],
    ['CTL in extension', '5;a\x01\r\n'],
    ['bare LF in trailer', '0\r\nX: y\n\r\n'],
    ['bare LF at the end', '0\r\n\n'],
  ];
  it.each(bad)('%s → framing error', (_name, text) => {
    expect(new ChunkedFramer().feed(Buffer.from(text, 'latin1'))).toBe(-2);
  });
});
