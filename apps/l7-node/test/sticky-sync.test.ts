import { randomUUID } from 'node:crypto';
import { SessionSync } from '@slb/node-runtime';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../src/metrics.js';
import { setCookieTtlMs } from '../src/sticky.js';
import { listener, type Running, startApp, startBackend, type TestBackend } from './helpers.js';

// Session sync of `server`-mode stickiness between two L7 nodes over real Redis: backend A's own cookie,
// learnt by node 1, pins the session to A on node 2 too. Backends are scheduled round-robin, so without the
// learnt cookie node 2 alternates A and B: six requests in a row reaching A prove the pin (the control with
// sync off shows B among them).

const REDIS_URL = 'redis://127.0.0.1:6379';
const COOKIE = 'SESSION=abc';

async function call(url: string, cookie?: string): Promise<string> {
  const res = await request(url, cookie ? { headers: { cookie } } : {});
  return ((await res.body.json()) as { backend: string }).backend;
}

async function backendsOf(url: string, n: number, cookie?: string): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(await call(url, cookie));
  return out;
}

describe('L7 server-mode sticky session sync', () => {
  const redis = new Redis(REDIS_URL, { lazyConnect: true });
  const prefixes: string[] = [];
  const syncs: SessionSync[] = [];
  const nodes: Running[] = [];
  let bes: TestBackend[];

  beforeAll(async () => {
    await redis.connect();
    bes = await Promise.all(
      ['a', 'b'].map((n) =>
        startBackend(n, (req, res) => {
          req.resume();
          // Only A hands out the session (10 minutes), and only to a client without one: a node can learn
          // SESSION=abc → A only from a response to a cookie-less request, never from the pinned ones.
          if (n === 'a' && req.headers.cookie === undefined)
            res.setHeader('set-cookie', [`${COOKIE}; Path=/; Max-Age=600`, 'theme=dark']);
          res.end(JSON.stringify({ backend: n }));
        }),
      ),
    );
  });

  afterAll(async () => {
    for (const n of nodes) await n.app.close();
    await Promise.all(syncs.map((s) => s.close()));
    await Promise.all(bes.map((b) => b.close()));
    for (const p of prefixes) {
      const keys = await redis.keys(`${p}:*`);
      if (keys.length > 0) await redis.del(...keys);
    }
    await redis.quit();
  });

  function newSync(prefix: string, nodeId: string, metrics: ReturnType<typeof createMetrics>): SessionSync {
    const s = new SessionSync({
      url: REDIS_URL,
      prefix,
      nodeId,
      logger: pino({ level: 'silent' }),
      registry: metrics.registry,
    });
    syncs.push(s);
    return s;
  }

  /** Node 1 and node 2 with the same listener (as the control plane gives every L7 node), sync on or off. */
  async function pair(withSync: boolean) {
    const prefix = `test-${randomUUID()}`;
    prefixes.push(prefix);
    const l = listener({
      scheduler: 'rr',
      stickySession: { mode: 'server', cookieName: 'SESSION', cookieTimeout: null },
      backends: bes.map((b) => b.spec),
    });
    const start = async (nodeId: string) => {
      const metrics = createMetrics();
      const node = await startApp(l, { metrics, ...(withSync ? { sync: newSync(prefix, nodeId, metrics) } : {}) });
      nodes.push(node);
      return node;
    };
    return { prefix, l, node1: await start('l7-one'), node2: await start('l7-two'), start };
  }

  /** Through node 1 until backend A answers: node 1 learns SESSION=abc → A. */
  async function learnOnNode1(node1: Running): Promise<void> {
    for (let i = 0; i < 2; i++) if ((await call(node1.url)) === 'a') return;
    throw new Error('backend A never answered on node 1');
  }

  it('sync on: a cookie learnt on node 1 pins the session to A on node 2 (and on a node started later)', async () => {
    const { prefix, l, node1, node2, start } = await pair(true);
    await learnOnNode1(node1);

    // Published with the cookie's Max-Age, under the listener's tenant + listener scope.
    const hash = `${prefix}:{${l.tenantId}:${l.id}}:entries`;
    await expect.poll(() => redis.hlen(hash), { timeout: 3000 }).toBe(1);
    const stored = JSON.parse(Object.values(await redis.hgetall(hash))[0]!) as unknown[];
    expect(stored.slice(1, 5)).toEqual(['sticky', 'abc', bes[0]!.spec.serverId, 600_000]);

    // Node 2 follows the stream: every request with the cookie reaches A.
    await expect
      .poll(() => backendsOf(node2.url, 6, COOKIE), { timeout: 3000, interval: 50 })
      .toEqual(Array(6).fill('a'));
    // Without the cookie node 2 still balances (the pin is the cookie's, not the node's).
    expect(new Set(await backendsOf(node2.url, 4))).toEqual(new Set(['a', 'b']));

    // A node that attaches after the entry was published loads it before serving.
    const node3 = await start('l7-three');
    expect(await backendsOf(node3.url, 6, COOKIE)).toEqual(Array(6).fill('a'));
  });

  it('sync off (control): node 2 does not know the cookie and round-robins the session onto B', async () => {
    const { node1, node2 } = await pair(false);
    await learnOnNode1(node1);
    // Node 1 itself is pinned (local learning works)…
    expect(await backendsOf(node1.url, 4, COOKIE)).toEqual(Array(4).fill('a'));
    // …but node 2 is not, even given time a sync would have had (a fixed window on purpose: nothing comes).
    await new Promise((r) => setTimeout(r, 300));
    expect(await backendsOf(node2.url, 6, COOKIE)).toContain('b');
  });
});

describe('setCookieTtlMs', () => {
  const now = Date.parse('2026-11-30T00:00:00Z');
  it('prefers Max-Age, then Expires; undefined for a session cookie', () => {
    expect(setCookieTtlMs('S=1; Path=/; Max-Age=60; Expires=Tue, 01 Dec 2026 00:00:00 GMT', now)).toBe(60_000);
    expect(setCookieTtlMs('S=1; expires=Tue, 01 Dec 2026 00:00:00 GMT', now)).toBe(86_400_000);
    expect(setCookieTtlMs('S=1; Max-Age=0', now)).toBe(0);
    expect(setCookieTtlMs('S=1; Path=/; HttpOnly', now)).toBeUndefined();
  });
});
