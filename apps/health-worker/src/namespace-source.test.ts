import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NAMESPACE_PATH, namespaceOf } from '@slb/model';
import { afterEach, expect, it, vi } from 'vitest';
import { healthNames } from './namespace-source.js';

const ns = namespaceOf('slb-00aa11bb22cc');
const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** An API stand-in on a real port; `answer` gets the call's number and gives its status and body. */
async function api(answer: (n: number) => [number, unknown]): Promise<{ url: string; calls: () => number }> {
  let n = 0;
  const server = createServer((req, res) => {
    if (req.url !== NAMESPACE_PATH) return void res.writeHead(404).end();
    const [status, body] = answer(++n);
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls: () => n };
}

it("asks the API for its deployment's names, waiting while the API is not ready", async () => {
  const a = await api((n) => (n < 3 ? [503, {}] : [200, ns]));
  expect(await healthNames({ apiUrls: [a.url], retryMs: 20 })).toEqual({
    queue: ns.healthQueue,
    keyPrefix: ns.healthKeyPrefix,
    clusterId: ns.clusterId,
  });
  expect(a.calls()).toBe(3);
});

it('keeps an explicit name, and does not ask at all when both are set', async () => {
  const a = await api(() => [200, ns]);
  expect(await healthNames({ apiUrls: [a.url], queue: 'q' })).toMatchObject({
    queue: 'q',
    keyPrefix: ns.healthKeyPrefix,
  });
  expect(await healthNames({ apiUrls: [a.url], queue: 'q', keyPrefix: 'p' })).toEqual({
    queue: 'q',
    keyPrefix: 'p',
    clusterId: null,
  });
  expect(a.calls()).toBe(1);
});

it('never falls back to a guessed name: an answer that is not a namespace keeps it waiting', async () => {
  const a = await api(() => [200, { healthQueue: 'slb-health' }]);
  const stop = new AbortController();
  const waiting = healthNames({ apiUrls: [a.url], retryMs: 20, signal: stop.signal });
  await vi.waitFor(() => expect(a.calls()).toBeGreaterThan(2), { timeout: 5000 });
  stop.abort();
  await expect(waiting).rejects.toThrow();
});

it('asks the replicas in order: one that is down costs one failed request, not a wait', async () => {
  const down = await api(() => [503, {}]);
  const up = await api(() => [200, ns]);
  const warnings: object[] = [];
  // A wait of a minute between rounds: the answer can only come from the second replica, in the first round.
  const names = await healthNames({
    apiUrls: [down.url, up.url],
    retryMs: 60_000,
    logger: { warn: (obj) => warnings.push(obj) },
  });
  expect(names.queue).toBe(ns.healthQueue);
  expect([down.calls(), up.calls()]).toEqual([1, 1]);
  expect(warnings).toEqual([]);
});

it('waits after a round in which no replica answered, and names them by position in its log line', async () => {
  const first = await api(() => [503, {}]);
  const second = await api((n) => (n < 2 ? [502, {}] : [200, ns]));
  const warnings: object[] = [];
  const names = await healthNames({
    apiUrls: [first.url, second.url],
    retryMs: 20,
    logger: { warn: (obj) => warnings.push(obj) },
  });
  expect(names.keyPrefix).toBe(ns.healthKeyPrefix);
  expect([first.calls(), second.calls()]).toEqual([2, 2]);
  expect(warnings).toEqual([{ round: 1, reasons: ['HTTP 503', 'HTTP 502'] }]);
});
