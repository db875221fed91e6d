import { connect } from 'node:net';
import { Agent, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { listener, startApp, startBackend } from './helpers.js';

// requestTimeout answers 504 when the backend is too slow; idleTimeout closes idle client keep-alive
// connections; a client that never finishes its headers is cut off.

describe('timeouts', () => {
  it('answers 504 when the backend does not answer within requestTimeout', async () => {
    const be = await startBackend('stuck', () => {});
    const node = await startApp(listener({ requestTimeout: 1, backends: [be.spec] }));
    const started = Date.now();
    const res = await request(`${node.url}/`);
    expect(res.statusCode).toBe(504);
    expect(await res.body.json()).toMatchObject({ detail: 'the backend server did not answer in time' });
    expect(Date.now() - started).toBeLessThan(3000);
    await node.app.close();
    await be.close();
  });

  it('closes an idle keep-alive connection after idleTimeout', async () => {
    const be = await startBackend('a');
    const node = await startApp(listener({ idleTimeout: 1, backends: [be.spec] }));
    const closedAt = await new Promise<number>((resolve) => {
      const s = connect(node.direct, '127.0.0.1', () => s.write('GET / HTTP/1.1\r\nHost: h\r\n\r\n'));
      s.on('data', () => {});
      s.on('close', () => resolve(Date.now()));
    });
    expect(closedAt).toBeGreaterThan(0);
    await node.app.close();
    await be.close();
  });

  it('cuts off a client that never finishes its request headers', async () => {
    const be = await startBackend('a');
    const node = await startApp(listener({ backends: [be.spec] }), { listener: { headersTimeoutMs: 500 } });
    const answer = await new Promise<string>((resolve) => {
      let got = '';
      const s = connect(node.direct, '127.0.0.1', () => s.write('GET / HTTP/1.1\r\nHost: h\r\nX-Slow: '));
      s.on('data', (d) => (got += d.toString()));
      s.on('close', () => resolve(got));
      s.on('error', () => {});
    });
    expect(answer.startsWith('HTTP/1.1 408')).toBe(true);
    expect(be.requests).toHaveLength(0);
    await node.app.close();
    await be.close();
  });

  it('bounds the whole header time: a slowloris client trickling a byte every 100 ms is still cut off', async () => {
    const be = await startBackend('a');
    const node = await startApp(listener({ backends: [be.spec] }), { listener: { headersTimeoutMs: 500 } });
    const header = `GET / HTTP/1.1\r\nHost: h\r\n${'X-Slow: a\r\n'.repeat(100)}`;
    const started = Date.now();
    const slow = () =>
      new Promise<{ answer: string; ms: number }>((resolve) => {
        let got = '';
        let i = 0;
        const s = connect(node.direct, '127.0.0.1');
        // Every byte resets an idle timer, so only a bound on the whole header can end this.
        const timer = setInterval(() => {
          if (i < header.length && !s.destroyed) s.write(header[i++]!);
        }, 100);
        s.on('data', (d) => (got += d.toString()));
        s.on('close', () => {
          clearInterval(timer);
          resolve({ answer: got, ms: Date.now() - started });
        });
        s.on('error', () => {});
      });
    const clients = await Promise.all([slow(), slow(), slow()]);
    for (const { answer, ms } of clients) {
      expect(answer.startsWith('HTTP/1.1 408')).toBe(true);
      // 500 ms of header time, checked every second by the server: well before the trickle would end.
      expect(ms).toBeLessThan(3000);
    }
    expect(be.requests).toHaveLength(0);
    await node.app.close();
    await be.close();
  });

  it('keeps a connection that is in use', async () => {
    const be = await startBackend('a');
    const node = await startApp(listener({ idleTimeout: 1, backends: [be.spec] }));
    const agent = new Agent({ connections: 1 });
    for (let i = 0; i < 3; i++) {
      const res = await request(`${node.url}/`, { dispatcher: agent });
      expect(res.statusCode).toBe(200);
      await res.body.text();
    }
    await agent.close();
    await node.app.close();
    await be.close();
  });
});
