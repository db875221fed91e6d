import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listener, type Running, startApp, startBackend, type TestBackend } from './helpers.js';

// Sticky sessions. insert: the node's cookie names the server. server: the node learns the backend's own
// cookie and routes requests carrying it back to the server that set it.

async function call(url: string, cookie?: string) {
  const res = await request(url, cookie ? { headers: { cookie } } : {});
  const body = (await res.body.json()) as { backend: string };
  const setCookie = res.headers['set-cookie'];
  return { backend: body.backend, setCookie: Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : [] };
}

describe('sticky insert', () => {
  let bes: TestBackend[];
  let node: Running;
  beforeAll(async () => {
    bes = await Promise.all(['a', 'b', 'c'].map((n) => startBackend(n)));
    node = await startApp(
      listener({
        scheduler: 'rr',
        stickySession: { mode: 'insert', cookieName: 'SLBSTICKY', cookieTimeout: 600 },
        backends: bes.map((b) => b.spec),
      }),
    );
  });
  afterAll(async () => {
    await node.app.close();
    await Promise.all(bes.map((b) => b.close()));
  });

  it('sets a cookie naming the server with Max-Age, and follows it', async () => {
    const first = await call(node.url);
    const served = bes.find((b) => b.requests.length === 1)!;
    expect(first.setCookie).toEqual([`SLBSTICKY=${served.spec.serverId}; Path=/; HttpOnly; Max-Age=600`]);
    for (let i = 0; i < 6; i++) {
      const r = await call(node.url, `other=1; SLBSTICKY=${served.spec.serverId}`);
      expect(r.backend).toBe(first.backend);
      expect(r.setCookie).toEqual([]);
    }
  });

  it('picks (and re-cookies) another server when the named one is gone', async () => {
    const r = await call(node.url, 'SLBSTICKY=srv-00000000000000000000');
    expect(r.setCookie[0]).toMatch(/^SLBSTICKY=srv-/);
  });
});

describe('sticky server', () => {
  it('routes a request carrying the backend cookie to the server that set it', async () => {
    const bes = await Promise.all(
      ['a', 'b', 'c'].map((n) =>
        startBackend(n, (_req, res) => {
          res.setHeader('set-cookie', [`JSESSIONID=sess-${n}; Path=/`, 'theme=dark']);
          res.end(JSON.stringify({ backend: n }));
        }),
      ),
    );
    const node = await startApp(
      listener({
        scheduler: 'rr',
        stickySession: { mode: 'server', cookieName: 'JSESSIONID', cookieTimeout: null },
        backends: bes.map((b) => b.spec),
      }),
    );
    const first = await call(node.url);
    expect(first.setCookie).toContain(`JSESSIONID=sess-${first.backend}; Path=/`);
    for (let i = 0; i < 6; i++) {
      expect((await call(node.url, `JSESSIONID=sess-${first.backend}`)).backend).toBe(first.backend);
    }
    const spread = new Set<string>();
    for (let i = 0; i < 6; i++) spread.add((await call(node.url, 'JSESSIONID=unknown')).backend);
    expect(spread.size).toBe(3);
    await node.app.close();
    await Promise.all(bes.map((b) => b.close()));
  });
});
