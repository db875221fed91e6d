import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, freePort, idServer, listener, newNode, pool, snapshot, whoAnswers } from './helpers.js';

describe('TCP distribution and persistence (real sockets)', () => {
  const node = newNode();
  let servers: Awaited<ReturnType<typeof idServer>>[] = [];
  let wrrPort = 0;
  let persistentPort = 0;

  beforeAll(async () => {
    servers = await Promise.all(['a', 'b', 'c'].map((n) => idServer(n)));
    [wrrPort, persistentPort] = [await freePort(), await freePort()];
    const weights = [10, 20, 30];
    await node.apply(
      snapshot(1, [
        listener(1, wrrPort, {
          scheduler: 'wrr',
          backends: servers.map((s, i) => backend(i, s.port, { weight: weights[i] })),
        }),
        listener(2, persistentPort, {
          scheduler: 'rr',
          persistenceTimeout: 60,
          backends: servers.map((s, i) => backend(i, s.port)),
        }),
      ]),
    );
  });

  afterAll(async () => {
    await node.close();
    await Promise.all(servers.map((s) => s.close()));
  });

  it('spreads 1,000 connections by weight 1:2:3 (within ±1%, wrr is exact per cycle)', async () => {
    const names = await pool(
      Array.from({ length: 1000 }, (_, i) => i),
      16,
      () => whoAnswers(wrrPort),
    );
    const count = (n: string) => names.filter((x) => x === n).length;
    // Each pick is one step of smooth WRR, so counts are exact to within one cycle (6 picks).
    expect(Math.abs(count('a') - 1000 / 6)).toBeLessThanOrEqual(10);
    expect(Math.abs(count('b') - 2000 / 6)).toBeLessThanOrEqual(10);
    expect(Math.abs(count('c') - 3000 / 6)).toBeLessThanOrEqual(10);
  });

  it('keeps a client IP on its backend across connections (persistence), other clients still spread', async () => {
    const first = await whoAnswers(persistentPort, { localAddress: '127.0.0.2' });
    for (let i = 0; i < 20; i++) expect(await whoAnswers(persistentPort, { localAddress: '127.0.0.2' })).toBe(first);
    // Different client addresses are scheduled round robin, so they do not all land on one backend.
    const others = new Set<string>();
    for (let i = 3; i < 9; i++) others.add(await whoAnswers(persistentPort, { localAddress: `127.0.0.${i}` }));
    expect(others.size).toBeGreaterThan(1);
  });
});
