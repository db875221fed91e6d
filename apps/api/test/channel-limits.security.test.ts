import { request } from 'node:http';
import { Writable } from 'node:stream';
import { CONTROL_CHANNEL_PATH, ENROLL_PATH } from '@slb/model';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ADMIN_TOKEN, call, makeApp, type TestApp } from './helpers.js';

// Guessing at the node endpoints is limited per source address, and logged once per burst, not per guess.

const lines: { msg: string; refused?: number }[] = [];
let t: TestApp;
let port: number;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  t = await makeApp(undefined, { logger: pino({ level: 'info' }, sink) as never });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  port = (t.app.server.address() as { port: number }).port;
});
afterAll(() => t.close());

/** One upgrade attempt: the HTTP status it got (101 when it became a WebSocket). */
function attempt(secret: string, localAddress = '127.0.0.1'): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}${CONTROL_CHANNEL_PATH}`, {
      headers: { authorization: `Bearer ${secret}` },
      localAddress,
    });
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('open', () => {
      resolve(101);
      ws.terminate();
    });
    ws.on('error', () => resolve(0));
  });
}

describe('limits on the control channel', () => {
  it('200 bad credentials in a burst: most get 429, a handful of log lines, and another address still joins', async () => {
    const statuses: number[] = [];
    const deadline = Date.now() + 60_000;
    for (let i = 0; i < 200 && Date.now() < deadline; i += 20) {
      statuses.push(...(await Promise.all(Array.from({ length: 20 }, (_, j) => attempt(`slbn_guess-${i + j}`)))));
    }
    expect(statuses).toHaveLength(200);
    const count = (s: number) => statuses.filter((x) => x === s).length;
    expect(count(401) + count(429)).toBe(200);
    expect(count(401)).toBeLessThanOrEqual(10);
    expect(count(429)).toBeGreaterThanOrEqual(190);
    const refusals = lines.filter((l) => l.msg === 'control plane refused node connections');
    expect(refusals.length).toBeGreaterThan(0);
    expect(refusals.length).toBeLessThanOrEqual(3);
    // Join tokens are guessed through the same limit.
    const enroll = await fetch(`http://127.0.0.1:${port}${ENROLL_PATH}`, {
      method: 'POST',
      headers: { authorization: 'Bearer slbj_guess' },
    });
    expect(enroll.status).toBe(429);

    // Real nodes are not held back by the guesser: neither one elsewhere nor one behind the same address.
    const node = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/nodes', { kind: 'l4', address: '127.0.0.95' });
    const neighbour = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/nodes', { kind: 'l4', address: '127.0.0.96' });
    const enrolled = await fetch(`http://127.0.0.1:${port}${ENROLL_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${neighbour.body.joinToken}` },
    });
    expect(enrolled.status).toBe(200);
    expect(await attempt(((await enrolled.json()) as { credential: string }).credential)).toBe(101);
    expect(await attempt('slbn_one-more-guess')).toBe(429);
    const viaOther = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: ENROLL_PATH,
          method: 'POST',
          localAddress: '127.0.0.2',
          headers: { authorization: `Bearer ${node.body.joinToken}` },
        },
        (res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(viaOther.status).toBe(200);
    expect(await attempt(JSON.parse(viaOther.body).credential, '127.0.0.2')).toBe(101);
  });
});
