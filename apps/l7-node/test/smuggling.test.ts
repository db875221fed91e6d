import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listener, type Running, rawExchange, startApp, startBackend, type TestBackend } from './helpers.js';

// Malformed or ambiguous requests are answered 400 (431 for oversize heads) and never reach a backend.

describe('request smuggling and malformed HTTP', () => {
  let be: TestBackend;
  let node: Running;
  beforeAll(async () => {
    be = await startBackend('victim');
    node = await startApp(listener({ backends: [be.spec] }), { listener: { maxHeaderSize: 8192 } });
  });
  afterAll(async () => {
    await node.app.close();
    await be.close();
  });

  const cases: [string, string, number][] = [
    [
      'Content-Length with Transfer-Encoding',
      'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n',
      400,
    ],
    [
      'duplicate Content-Length',
      'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 30\r\n\r\nabc',
      400,
    ],
    ['invalid header name', 'GET / HTTP/1.1\r\nHost: h\r\nBad Name: x\r\n\r\n', 400],
    ['space before colon', 'GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n', 400],
    ['obfuscated Transfer-Encoding', 'POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: xchunked\r\n\r\n', 400],
    [
      'bare LF line endings in chunk size',
      'POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;\n\nabc\r\n0\r\n\r\n',
      400,
    ],
    ['missing Host', 'GET / HTTP/1.1\r\n\r\n', 400],
    ['oversize header', `GET / HTTP/1.1\r\nHost: h\r\nX-Big: ${'a'.repeat(10_000)}\r\n\r\n`, 431],
  ];

  it.each(cases)('%s → %d, backend untouched', async (_name, raw, status) => {
    const seen = be.requests.length;
    const answer = await rawExchange(node.direct, raw);
    expect(answer.startsWith(`HTTP/1.1 ${status} `)).toBe(true);
    expect(be.requests.length).toBe(seen);
  });
});
