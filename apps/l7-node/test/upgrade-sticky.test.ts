import type { L7Backend } from '@slb/model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { id, listener, type Running, rawExchange, startApp } from './helpers.js';
import { type RawBackend, startRawBackend } from './raw-http.js';

// Upgrade requests take the same sticky routing as other requests: an insert-mode cookie naming a server
// sends the WebSocket to that server, and a 101 to a request without one carries the cookie the next
// request sticks with. Both L7 paths (the fast path hands Upgrade requests to node:http).

/** A backend named `name`: a 200 to /plain, else a 101 setting its own session cookie. */
const answerAs = (name: string) => (head: string) =>
  head.startsWith('GET /plain ')
    ? `HTTP/1.1 200 OK\r\nX-Backend: ${name}\r\nContent-Length: 2\r\n\r\nok`
    : 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      `X-Backend: ${name}\r\nSet-Cookie: JSESSIONID=sess-${name}\r\n\r\n`;

function upgrade(port: number, cookie?: string, path = '/ws'): Promise<string> {
  const c = cookie ? `Cookie: ${cookie}\r\n` : '';
  // The tunnel stays open: what arrived within the timeout is the 101 head.
  return rawExchange(
    port,
    `GET ${path} HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n${c}\r\n`,
    300,
  );
}

const servedBy = (answer: string) => /X-Backend: (\w)/.exec(answer)![1]!;

describe.each([
  ['fast path', true],
  ['node:http path', false],
])('sticky upgrade (%s)', (_name, fastPath) => {
  const names = ['a', 'b', 'c'];
  let bes: RawBackend[];
  let specs: L7Backend[];
  let node: Running;
  beforeAll(async () => {
    bes = await Promise.all(names.map((n) => startRawBackend(answerAs(n))));
    specs = bes.map((b) => ({ serverId: id('srv'), address: '127.0.0.1', port: b.port, weight: 100, healthy: true }));
    node = await startApp(
      listener({
        scheduler: 'rr',
        stickySession: { mode: 'insert', cookieName: 'SLBSTICKY', cookieTimeout: 600 },
        backends: specs,
      }),
      { listener: { fastPath } },
    );
  });
  afterAll(async () => {
    await node.app.close();
    await Promise.all(bes.map((b) => b.close()));
  });

  it('goes to the server its sticky cookie names, every time', async () => {
    const named = specs[1]!.serverId;
    for (let i = 0; i < 4; i++) {
      const answer = await upgrade(node.direct, `other=1; SLBSTICKY=${named}`);
      expect(answer).toMatch(/^HTTP\/1\.1 101 /);
      expect(answer).toContain('X-Backend: b\r\n');
      // Already stuck: no new cookie.
      expect(answer).not.toContain('set-cookie: SLBSTICKY');
    }
  });

  it('a 101 to a request without the cookie carries one naming the server that answered', async () => {
    const answer = await upgrade(node.direct);
    expect(answer).toMatch(/^HTTP\/1\.1 101 /);
    const served = names.indexOf(servedBy(answer));
    expect(answer).toContain(`set-cookie: SLBSTICKY=${specs[served]!.serverId}; Path=/; HttpOnly; Max-Age=600\r\n`);
    // The head is still the backend's own, ending where it did.
    expect(answer.endsWith('\r\n\r\n')).toBe(true);
    expect(answer).toContain('Connection: Upgrade\r\n');
  });

  it('an ordinary answer to an upgrade request carries the cookie too', async () => {
    const answer = await upgrade(node.direct, undefined, '/plain');
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    const served = names.indexOf(servedBy(answer));
    expect(answer).toContain(`set-cookie: SLBSTICKY=${specs[served]!.serverId}; Path=/; HttpOnly; Max-Age=600\r\n`);
  });
});

describe('sticky upgrade, server mode', () => {
  it("learns the backend's cookie from its 101 and sends upgrades carrying it back there", async () => {
    const bes = await Promise.all(['a', 'b', 'c'].map((n) => startRawBackend(answerAs(n))));
    const node = await startApp(
      listener({
        scheduler: 'rr',
        stickySession: { mode: 'server', cookieName: 'JSESSIONID', cookieTimeout: null },
        backends: bes.map((b) => ({
          serverId: id('srv'),
          address: '127.0.0.1',
          port: b.port,
          weight: 100,
          healthy: true,
        })),
      }),
    );
    try {
      const first = servedBy(await upgrade(node.direct));
      for (let i = 0; i < 4; i++) expect(servedBy(await upgrade(node.direct, `JSESSIONID=sess-${first}`))).toBe(first);
    } finally {
      await node.app.close();
      await Promise.all(bes.map((b) => b.close()));
    }
  });
});
