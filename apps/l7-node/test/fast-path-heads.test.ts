import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { id, listener, type Running, rawExchange, startApp } from './helpers.js';
import { type RawBackend, startRawBackend } from './raw-http.js';

// The fast path's heads byte for byte, on real sockets: a usual head takes the byte path (response-head-bytes.ts,
// request-head-bytes.ts), one in another shape the string path, one in pieces is put together first; the client
// and the backend get the same bytes whichever path a head took.

const KEPT = 'Server: raw\r\nSet-Cookie: a=1; Path=/\r\nX-Kept: k';
const DROPPED = 'Keep-Alive: timeout=5\r\nProxy-Connection: x\r\nTE: t\r\nTrailer: X-T\r\nConnection: keep-alive';
const RESPONSE = `HTTP/1.1 200 OK\r\n${KEPT}\r\n${DROPPED}\r\nContent-Length: 2\r\n\r\nok`;
// What the client gets: the kept lines as sent, the node's framing and close lines, the body.
const TO_CLIENT = `HTTP/1.1 200 OK\r\n${KEPT}\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok`;

describe('heads on the fast path', () => {
  let be: RawBackend;
  let node: Running;
  beforeAll(async () => {
    be = await startRawBackend((head, _n, socket) => {
      const target = head.split(' ')[1];
      // Not `name: value`: the string path rewrites the line as `X-Odd: v`.
      if (target === '/odd') return RESPONSE.replace('X-Kept: k', 'X-Kept:k');
      if (target === '/pieces') {
        const cut = RESPONSE.indexOf('Proxy-');
        setTimeout(() => socket.write(RESPONSE.slice(cut)), 30);
        return RESPONSE.slice(0, cut);
      }
      return RESPONSE;
    });
    node = await startApp(
      listener({
        backends: [{ serverId: id('srv'), address: '127.0.0.1', port: be.port, weight: 100, healthy: true }],
      }),
      { listener: { fastPath: true } },
    );
  });
  afterAll(async () => {
    await node.app.close();
    await be.close();
  });

  const ask = (target: string, extra = '') =>
    rawExchange(node.direct, `GET ${target} HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n${extra}Connection: close\r\n\r\n`);

  it('copies the kept lines of a usual head and drops the hop-by-hop ones, both ways', async () => {
    expect(await ask('/usual', 'Keep-Alive: 1\r\nX-Forwarded-Host: evil\r\n')).toBe(TO_CLIENT);
    expect(be.heads.at(-1)).toBe(
      'GET /usual HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-forwarded-for: 127.0.0.1\r\nx-forwarded-proto: http\r\n' +
        `x-forwarded-port: ${node.direct}\r\nx-real-ip: 127.0.0.1`,
    );
  });

  it('writes the same head from the string path for a line in another shape', async () => {
    expect(await ask('/odd', 'X-B:2\r\n')).toBe(TO_CLIENT);
    expect(be.heads.at(-1)).toContain('\r\nX-A: 1\r\nX-B: 2\r\nx-forwarded-for: 127.0.0.1\r\n');
  });

  it('puts a head that came in pieces together and writes the same bytes', async () => {
    expect(await ask('/pieces')).toBe(TO_CLIENT);
  });
});
