import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { id, listener, type Running, refusedPort, startApp, startBackend, type TestBackend } from './helpers.js';

// A refused backend costs the client nothing: the request goes to another backend, and after a few
// failures passive health ejects the refused one (but never more than half the group).

const sum = async (m: { get(): Promise<{ values: { value: number }[] }> }) =>
  (await m.get()).values.reduce((s, v) => s + v.value, 0);

describe('retry on a refused backend', () => {
  let good: TestBackend;
  let node: Running;
  beforeAll(async () => {
    good = await startBackend('good');
    const dead = { serverId: id('srv'), address: '127.0.0.1', port: await refusedPort(), weight: 100, healthy: true };
    node = await startApp(listener({ scheduler: 'rr', backends: [dead, good.spec] }), {
      passiveHealth: { consecutiveFailures: 3, baseEjectionMs: 60_000 },
    });
  });
  afterAll(async () => {
    await node.app.close();
    await good.close();
  });

  it('answers every request (GET and POST) with zero client errors, then ejects the dead backend', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await request(`${node.url}/r${i}`, i % 2 ? { method: 'POST', body: `body-${i}` } : {});
      await res.body.text();
      statuses.push(res.statusCode);
    }
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(good.requests).toHaveLength(20);
    const m = node.app.metrics;
    expect(await sum(m.retries)).toBeGreaterThanOrEqual(3);
    expect(await sum(m.ejections)).toBe(1);
    // Once ejected the dead backend is not tried any more: retries stop growing.
    const retries = await sum(m.retries);
    for (let i = 0; i < 5; i++) await (await request(`${node.url}/after`)).body.text();
    expect(await sum(m.retries)).toBe(retries);
  });
});

describe('when every backend is refused', () => {
  it('answers 502 naming the cause, bounded attempts, and ejects at most half the pool', async () => {
    const backends = await Promise.all(
      [1, 2, 3, 4].map(async () => ({
        serverId: id('srv'),
        address: '127.0.0.1',
        port: await refusedPort(),
        weight: 100,
        healthy: true,
      })),
    );
    const node = await startApp(listener({ backends }), {
      maxAttempts: 2,
      passiveHealth: { consecutiveFailures: 1, baseEjectionMs: 60_000, maxEjectionPercent: 50 },
    });
    for (let i = 0; i < 6; i++) {
      const res = await request(`${node.url}/`);
      expect(res.statusCode).toBe(502);
      expect(await res.body.json()).toMatchObject({ detail: 'the backend server connection failed' });
    }
    expect(await sum(node.app.metrics.ejections)).toBe(2);
    expect(await sum(node.app.metrics.connectFailures)).toBe(12);
    await node.app.close();
  });
});

describe('reset before any response byte', () => {
  it('retries GET on another backend but answers 502 to POST', async () => {
    const resetter = await startBackend('resetter', (req) => req.socket.destroy());
    const good = await startBackend('good');
    const node = await startApp(listener({ scheduler: 'rr', backends: [resetter.spec, good.spec] }), {
      passiveHealth: { consecutiveFailures: 100 },
    });
    const gets: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await request(`${node.url}/g`);
      await res.body.text();
      gets.push(res.statusCode);
    }
    expect(gets).toEqual([200, 200, 200, 200]);
    const posts: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await request(`${node.url}/p`, { method: 'POST', body: 'x' });
      await res.body.text();
      posts.push(res.statusCode);
    }
    expect(posts.filter((s) => s === 502).length).toBe(2);
    await node.app.close();
    await resetter.close();
    await good.close();
  });
});

describe('retry budget', () => {
  it('refuses retries of requests a backend reset past the budget, and counts it', async () => {
    const resetter = await startBackend('resetter', (req) => req.socket.destroy());
    const good = await startBackend('good');
    const node = await startApp(listener({ scheduler: 'rr', backends: [resetter.spec, good.spec] }), {
      retryBudget: { budgetPercent: 0, minConcurrency: 0 },
      passiveHealth: { consecutiveFailures: 100 },
    });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await request(`${node.url}/`);
      await res.body.text();
      statuses.push(res.statusCode);
    }
    expect(statuses.sort()).toEqual([200, 200, 502, 502]);
    expect(await sum(node.app.metrics.retryBudgetExhausted)).toBe(2);
    await node.app.close();
    await resetter.close();
    await good.close();
  });

  it('never refuses the retry of a failed connect: no backend saw the request (a black hole costs no 502)', async () => {
    const good = await startBackend('good');
    const dead = { serverId: id('srv'), address: '127.0.0.1', port: await refusedPort(), weight: 100, healthy: true };
    const node = await startApp(listener({ scheduler: 'rr', backends: [dead, good.spec] }), {
      retryBudget: { budgetPercent: 0, minConcurrency: 0 },
      passiveHealth: { consecutiveFailures: 100 },
    });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await request(`${node.url}/`);
      await res.body.text();
      statuses.push(res.statusCode);
    }
    expect(statuses).toEqual([200, 200, 200, 200]);
    expect(await sum(node.app.metrics.retries)).toBe(4); // rr sends every first attempt to the dead one
    expect(await sum(node.app.metrics.retryBudgetExhausted)).toBe(0);
    await node.app.close();
    await good.close();
  });
});
