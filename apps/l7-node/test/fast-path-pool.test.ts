import type { Server } from 'node:http';
import { Agent, request } from 'undici';
import { describe, expect, it, vi } from 'vitest';
import { id, listener, startApp, startBackend } from './helpers.js';
import { converse, startRawBackend } from './raw-http.js';

const openConnections = (server: Server) =>
  new Promise<number>((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));

// Backend keep-alive: connections are reused, and a connection the backend closed while idle costs the
// client nothing (the request goes out again on a fresh connection).

describe.each([
  ['fast path', true],
  ['node:http path', false],
])('backend keep-alive (%s)', (_name, fastPath) => {
  it('reuses backend connections: fewer connections than requests', async () => {
    const be = await startBackend('a');
    let conns = 0;
    be.server.on('connection', () => conns++);
    const node = await startApp(listener({ backends: [be.spec] }), { listener: { fastPath } });
    const agent = new Agent({ connections: 1 });
    for (let i = 0; i < 20; i++) {
      const res = await request(`${node.url}/${i}`, { dispatcher: agent });
      expect(res.statusCode).toBe(200);
      await res.body.text();
    }
    expect(be.requests).toHaveLength(20);
    expect(conns).toBeLessThanOrEqual(2);
    await agent.close();
    await node.app.close();
    await be.close();
  });

  it('a backend that closes idle keep-alive connections costs the client nothing', async () => {
    const be = await startBackend('a');
    be.server.keepAliveTimeout = 100;
    const node = await startApp(listener({ backends: [be.spec] }), { listener: { fastPath } });
    const agent = new Agent({ connections: 1 });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await request(`${node.url}/`, { dispatcher: agent });
      statuses.push(res.statusCode);
      await res.body.text();
      // The backend closes the pooled connection once idle: the next request finds it closed.
      await vi.waitFor(async () => expect(await openConnections(be.server)).toBe(0), { timeout: 5000, interval: 20 });
    }
    expect(statuses).toEqual([200, 200, 200, 200]);
    await agent.close();
    await node.app.close();
    await be.close();
  });
});

describe('connection cap (fast path)', () => {
  it('queues requests past connectionsPerBackend and serves them in turn on the capped connections', async () => {
    const be = await startBackend('a', (req, res) => {
      req.resume();
      setTimeout(() => res.end(req.url), 30);
    });
    let conns = 0;
    be.server.on('connection', () => conns++);
    const node = await startApp(listener({ backends: [be.spec] }), { pools: { connectionsPerBackend: 2 } });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        request(`${node.url}/${i}`).then(async (r) => [r.statusCode, await r.body.text()]),
      ),
    );
    expect(results).toEqual(Array.from({ length: 8 }, (_, i) => [200, `/${i}`]));
    expect(conns).toBe(2);
    await node.app.close();
    await be.close();
  });
});

describe('stale backend connection (fast path)', () => {
  it('a GET on a kept-alive socket the backend drops unanswered is retried on a new one, even with one backend', async () => {
    // Answers the first request on each connection, then drops the connection on the second one unanswered:
    // the race of a backend closing an idle connection just as the node reuses it.
    const be = await startRawBackend((head, n) =>
      n === 0 ? `HTTP/1.1 200 OK\r\nContent-Length: ${head.split(' ')[1]!.length}\r\n\r\n${head.split(' ')[1]}` : null,
    );
    const l = listener({
      backends: [{ serverId: id('srv'), address: '127.0.0.1', port: be.port, weight: 100, healthy: true }],
    });
    const node = await startApp(l);
    const bodies: string[] = [];
    for (const path of ['/one', '/two', '/three']) {
      const c = await converse(node.direct, `GET ${path} HTTP/1.1\r\nHost: h\r\n\r\n`, 1);
      expect(c.responses[0]?.status).toBe(200);
      bodies.push(c.responses[0]!.body.toString());
    }
    expect(bodies).toEqual(['/one', '/two', '/three']);
    expect(be.connections).toBe(3);
    expect(await node.app.metrics.registry.getSingleMetricAsString('slb_l7_retries_total')).not.toMatch(/ [1-9]\d*$/m);
    await node.app.close();
    await be.close();
  });

  it('a POST with a body on such a socket is not resent (502)', async () => {
    const be = await startRawBackend((_head, n) => (n === 0 ? 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok' : null));
    const l = listener({
      backends: [{ serverId: id('srv'), address: '127.0.0.1', port: be.port, weight: 100, healthy: true }],
    });
    const node = await startApp(l);
    const first = await converse(node.direct, 'GET / HTTP/1.1\r\nHost: h\r\n\r\n', 1);
    expect(first.responses[0]?.status).toBe(200);
    const c = await converse(node.direct, 'POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi', 1);
    expect(c.responses[0]?.status).toBe(502);
    await node.app.close();
    await be.close();
  });
});
