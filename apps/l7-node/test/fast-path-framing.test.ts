import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { id, listener, type Running, startApp } from './helpers.js';
import { converse, type RawBackend, startRawBackend } from './raw-http.js';

// Message framing on a keep-alive connection: pipelined requests are answered in order, chunked and
// close-delimited responses arrive intact, HEAD, 204 and 304 (a Content-Length without a body) leave the
// connection in step, and a malformed backend response is a 502. Same behaviour on both paths.

const BIG = 'z'.repeat(100_000);

function respond(head: string): string | null {
  const [method, target] = head.split('\r\n')[0]!.split(' ');
  switch (target) {
    case '/chunked':
      return `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n${BIG.length.toString(16)}\r\n${BIG}\r\n0\r\nX-Trailer: t\r\n\r\n`;
    case '/close':
      return `HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n${BIG}`;
    case '/head':
      return 'HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n';
    case '/304':
      return 'HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\nETag: "x"\r\n\r\n';
    case '/204':
      return 'HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n';
    case '/bad-header':
      return 'HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 2\r\n\r\nok';
    case '/two-lengths':
      return 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!';
    case '/garbage':
      return 'HTTP/1.1 2OO OK\r\n\r\n';
    case '/switch':
      return 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n';
    case '/early-hints':
      return 'HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok';
    default:
      return `HTTP/1.1 200 OK\r\nContent-Length: ${target!.length + method!.length + 1}\r\n\r\n${method} ${target}`;
  }
}

describe.each([
  ['fast path', true],
  ['node:http path', false],
])('framing (%s)', (_name, fastPath) => {
  let be: RawBackend;
  let node: Running;
  beforeAll(async () => {
    be = await startRawBackend((head, _n, socket) => {
      // A close-delimited response ends when the backend closes.
      if (head.startsWith('GET /close ')) setImmediate(() => socket.end());
      return respond(head);
    });
    const l = listener({
      backends: [{ serverId: id('srv'), address: '127.0.0.1', port: be.port, weight: 100, healthy: true }],
    });
    node = await startApp(l, { listener: { fastPath } });
  });
  afterAll(async () => {
    await node.app.close();
    await be.close();
  });

  const get = (path: string, method = 'GET') => `${method} ${path} HTTP/1.1\r\nHost: h\r\n\r\n`;

  it('answers pipelined requests in order', async () => {
    const c = await converse(node.direct, get('/a') + get('/b', 'DELETE') + get('/c'), 3);
    expect(c.responses.map((r) => r.body.toString())).toEqual(['GET /a', 'DELETE /b', 'GET /c']);
    expect(c.rest.length).toBe(0);
  });

  it('frames a head that arrives a few bytes at a time', async () => {
    const text = `${get('/trickle')}${get('/after')}`;
    const c = await new Promise<string>((resolve) => {
      let got = '';
      const s = connect(node.direct, '127.0.0.1', async () => {
        for (let i = 0; i < text.length; i += 3) {
          s.write(text.slice(i, i + 3));
          await new Promise((r) => setTimeout(r, 1));
        }
      });
      s.on('data', (d) => {
        got += d.toString('latin1');
        if (got.includes('GET /after')) s.destroy();
      });
      s.on('close', () => resolve(got));
      setTimeout(() => s.destroy(), 3000);
    });
    expect(c).toContain('GET /trickle');
    expect(c).toContain('GET /after');
  });

  it('forwards a chunked response intact, trailers included, and the connection stays usable', async () => {
    const c = await converse(node.direct, get('/chunked') + get('/after'), 2);
    expect(c.responses[0]!.body.toString()).toBe(`hello${BIG}`);
    expect(c.responses[1]!.body.toString()).toBe('GET /after');
  });

  it('forwards a close-delimited response intact', async () => {
    const c = await converse(node.direct, get('/close'), 1, { timeoutMs: 2000 });
    expect(c.responses[0]?.body.toString()).toBe(BIG);
  });

  it('HEAD with a Content-Length and no body does not desync the next request', async () => {
    const c = await converse(node.direct, get('/head', 'HEAD') + get('/next'), 2, { heads: [true, false] });
    expect(c.responses[0]!.status).toBe(200);
    expect(c.responses[0]!.headers['content-length']).toBe('1234');
    expect(c.responses[1]!.body.toString()).toBe('GET /next');
    expect(c.rest.length).toBe(0);
  });

  it.each([
    ['/304', 304],
    ['/204', 204],
  ])('%s with a Content-Length and no body does not desync the next request', async (path, status) => {
    const c = await converse(node.direct, get(path) + get('/next'), 2);
    expect(c.responses[0]!.status).toBe(status);
    expect(c.responses[1]!.body.toString()).toBe('GET /next');
    expect(c.rest.length).toBe(0);
  });

  it.each(['/bad-header', '/two-lengths', '/garbage', '/switch'])(
    'a malformed backend response (%s) is a 502',
    async (path) => {
      const c = await converse(node.direct, get(path), 1);
      expect(c.responses[0]?.status).toBe(502);
      expect(c.responses[0]?.body.toString()).toContain('backend-failed');
    },
  );
});

describe('interim responses (fast path)', () => {
  it('forwards a 103 before the final response', async () => {
    const be = await startRawBackend(respond);
    const l = listener({
      backends: [{ serverId: id('srv'), address: '127.0.0.1', port: be.port, weight: 100, healthy: true }],
    });
    const node = await startApp(l);
    const c = await converse(node.direct, 'GET /early-hints HTTP/1.1\r\nHost: h\r\n\r\n', 1);
    expect(c.responses[0]?.body.toString()).toBe('ok');
    await node.app.close();
    await be.close();
  });
});
