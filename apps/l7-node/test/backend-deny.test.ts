import { once } from 'node:events';
import net from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createL7App, type L7App } from '../src/app.js';
import { id, listener, refusedPort, startBackend, type TestBackend } from './helpers.js';

// Defence in depth: a backend the snapshot's deny set names (a stand-in for the cloud's Redis, spelt as an
// IPv4-mapped IPv6 address) or one that is the node's own listener is never connected to. The stand-in
// is a real listening socket that must see no connection.

describe('L7 node: denied backends are never connected to', () => {
  let app: L7App;
  let good: TestBackend;
  const redis = net.createServer((s) => s.destroy());
  let redisConnections = 0;
  let mixedUrl = '';
  let onlyDeniedUrl = '';
  let selfUrl = '';

  beforeAll(async () => {
    redis.on('connection', () => redisConnections++);
    redis.listen(0, '127.0.0.1');
    await once(redis, 'listening');
    const redisPort = (redis.address() as net.AddressInfo).port;
    good = await startBackend('good');
    const [mixedPort, onlyDeniedPort, selfPort] = [await refusedPort(), await refusedPort(), await refusedPort()];
    const denied = (address: string, port: number) => ({
      serverId: id('srv'),
      address,
      port,
      weight: 100,
      healthy: true,
    });
    app = createL7App({ drainMs: 200 });
    await app.apply({
      version: 1,
      generatedAt: '2026-12-01T00:00:00Z',
      backendDeny: [{ cidr: '127.0.0.1/32', port: redisPort }],
      listeners: [
        listener({ directPort: mixedPort, backends: [denied('::ffff:7f00:1', redisPort), good.spec] }),
        listener({ directPort: onlyDeniedPort, backends: [denied('127.0.0.1', redisPort), denied('fe80::1', 80)] }),
        // Its first backend is its own direct port: dialling it would loop through this node.
        listener({
          bindAddress: '127.0.0.1',
          directPort: selfPort,
          backends: [denied('127.0.0.1', selfPort), good.spec],
        }),
      ],
    });
    mixedUrl = `http://127.0.0.1:${mixedPort}`;
    onlyDeniedUrl = `http://127.0.0.1:${onlyDeniedPort}`;
    selfUrl = `http://127.0.0.1:${selfPort}`;
  });
  afterAll(async () => {
    await app.close();
    await good.close();
    redis.close();
  });

  it('counts what it left out, by reason', async () => {
    const text = await app.metrics.registry.getSingleMetricAsString('slb_l7_backend_denied_total');
    expect(text).toMatch(/slb_l7_backend_denied_total\{reason="cloud_endpoint"\} 2/);
    expect(text).toMatch(/slb_l7_backend_denied_total\{reason="link_local"\} 1/);
    expect(text).toMatch(/slb_l7_backend_denied_total\{reason="self_loop"\} 1/);
  });

  it('sends every request to the allowed backend and none to the denied one', async () => {
    for (const url of [mixedUrl, selfUrl]) {
      for (let i = 0; i < 10; i++) {
        const res = await request(url, { headersTimeout: 5000, bodyTimeout: 5000 });
        expect(JSON.parse(await res.body.text()).backend).toBe('good');
      }
    }
    expect(redisConnections).toBe(0);
  }, 30_000);

  it('answers 503 when a group has only denied backends, without dialling them', async () => {
    const res = await request(onlyDeniedUrl, { headersTimeout: 5000, bodyTimeout: 5000 });
    await res.body.text();
    expect(res.statusCode).toBe(503);
    expect(redisConnections).toBe(0);
  }, 30_000);
});

describe('L7 node: a new deny set in a delta', () => {
  let app: L7App;
  let a: TestBackend;
  let b: TestBackend;
  afterAll(async () => {
    await app.close();
    await a.close();
    await b.close();
  });

  it('reaches a listener whose config is the very object it already runs', async () => {
    a = await startBackend('a');
    b = await startBackend('b');
    const port = await refusedPort();
    const url = `http://127.0.0.1:${port}`;
    const answers = async (n: number) => {
      const seen = new Set<string>();
      for (let i = 0; i < n; i++) {
        const res = await request(url, { headersTimeout: 5000, bodyTimeout: 5000 });
        seen.add(JSON.parse(await res.body.text()).backend);
      }
      return seen;
    };
    app = createL7App({ drainMs: 200 });
    const first = {
      version: 1,
      generatedAt: '2026-12-01T00:00:00Z',
      listeners: [listener({ directPort: port, backends: [a.spec, b.spec] })],
    };
    await app.apply(first);
    expect(await answers(8)).toEqual(new Set(['a', 'b']));
    // What the control channel makes of a delta with only `backendDeny`: the same listener objects, applied whole.
    await app.apply({ ...first, version: 2, backendDeny: [{ cidr: '127.0.0.1/32', port: b.spec.port }] });
    expect(await answers(8)).toEqual(new Set(['a']));
  }, 30_000);
});
