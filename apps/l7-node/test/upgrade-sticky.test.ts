import type { L7Backend } from '@slb/model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { id, listener, type Running, rawExchange, startApp } from './helpers.js';
import { type RawBackend, startRawBackend } from './raw-http.js';

// Upgrade requests take the same sticky routing as other requests: an insert-mode cookie naming a server
// sends the WebSocket to that server, and a 101 to a request without one carries the cookie the next
// request sticks with. Both L7 paths (the fast path hands Upgrade requests to node:http).

const SWITCH = (name: string) =>
  `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Backend: ${name}\r\n\r\n`;

function upgrade(port: number, cookie?: string): Promise<string> {
  const c = cookie ? `Cookie: ${cookie}\r\n` : '';
  // The tunnel stays open: what arrived within the timeout is the 101 head.
  return rawExchange(port, `GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n${c}\r\n`, 300);
}

describe.each([
  ['fast path', true],
  ['node:http path', false],
])('sticky upgrade (%s)', (_name, fastPath) => {
  const names = ['a', 'b', 'c'];
  let bes: RawBackend[];
  let specs: L7Backend[];
  let node: Running;
  beforeAll(async () => {
    bes = await Promise.all(names.map((n) => startRawBackend(() => SWITCH(n))));
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
      expect(answer.toLowerCase()).not.toContain('set-cookie');
    }
  });

  it('a 101 to a request without the cookie carries one naming the server that answered', async () => {
    const answer = await upgrade(node.direct);
    expect(answer).toMatch(/^HTTP\/1\.1 101 /);
    const served = names.indexOf(/X-Backend: (\w)/.exec(answer)![1]!);
    expect(answer).toContain(`set-cookie: SLBSTICKY=${specs[served]!.serverId}; Path=/; HttpOnly; Max-Age=600\r\n`);
    // The head is still the backend's own, ending where it did.
    expect(answer.endsWith('\r\n\r\n')).toBe(true);
    expect(answer).toContain('Connection: Upgrade\r\n');
  });
});
