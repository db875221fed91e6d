import { describe, expect, it } from 'vitest';
import { parseResponseHead } from './http1-parser.js';
import { ResponseFraming } from './response-framing.js';

const framing = (method: string, head: string) => new ResponseFraming(method, parseResponseHead(head)!);

describe('ResponseFraming', () => {
  it('HEAD, 204 and 304 have no body but keep the length they describe', () => {
    for (const [m, h] of [
      ['HEAD', 'HTTP/1.1 200 OK\r\nContent-Length: 10'],
      ['GET', 'HTTP/1.1 304 Not Modified\r\nContent-Length: 10'],
      ['GET', 'HTTP/1.1 204 No Content'],
    ] as const) {
      const f = framing(m, h);
      expect(f.kind).toBe('none');
      expect(f.complete).toBe(true);
      expect(f.take(Buffer.from('next request bytes'), 0)).toBe(0);
    }
    const out: string[] = [];
    framing('HEAD', 'HTTP/1.1 200 OK\r\nContent-Length: 10').addHeaders(out);
    expect(out).toEqual(['content-length', '10']);
  });

  it('Content-Length: takes exactly the body, across buffers, and leaves what follows', () => {
    const f = framing('GET', 'HTTP/1.1 200 OK\r\nContent-Length: 5');
    expect(f.take(Buffer.from('xxabc'), 2)).toBe(3);
    expect(f.complete).toBe(false);
    expect(f.take(Buffer.from('deHTTP/1.1'), 0)).toBe(2);
    expect(f.complete).toBe(true);
  });

  it('chunked: follows the framing and says where it ends; a framing error is -1', () => {
    const f = framing('GET', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked');
    const out: string[] = [];
    f.addHeaders(out);
    expect(out).toEqual(['transfer-encoding', 'chunked']);
    expect(f.take(Buffer.from('3\r\nabc\r\n0\r\n\r\nrest'), 0)).toBe(13);
    expect(f.complete).toBe(true);
    expect(framing('GET', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked').take(Buffer.from('zz\r\n'), 0)).toBe(-1);
  });

  it('no length: the body runs to EOF', () => {
    const f = framing('GET', 'HTTP/1.1 200 OK');
    expect(f.kind).toBe('close');
    expect(f.take(Buffer.from('abc'), 1)).toBe(2);
    expect(f.complete).toBe(false);
  });
});
