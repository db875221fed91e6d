import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, freePort, idServer, listener, newNode, snapshot, whoAnswers } from './helpers.js';

// Defence in depth: a backend the snapshot's deny set names (here a stand-in for the cloud's Redis, spelt
// as an IPv4-mapped IPv6 address), or one that is the node's own listener, is never connected to, even
// though the snapshot lists it. The stand-in is a real listening socket that must see no connection.

describe('L4 node: denied backends are never connected to', () => {
  const node = newNode();
  let redis: Awaited<ReturnType<typeof idServer>>;
  let good: Awaited<ReturnType<typeof idServer>>;
  let mixedPort = 0;
  let onlyDeniedPort = 0;
  let selfPort = 0;

  beforeAll(async () => {
    redis = await idServer('redis');
    good = await idServer('good');
    [mixedPort, onlyDeniedPort, selfPort] = [await freePort(), await freePort(), await freePort()];
    await node.apply(
      snapshot(
        1,
        [
          listener(1, mixedPort, {
            scheduler: 'rr',
            backends: [backend(1, redis.port, { address: '::ffff:7f00:1' }), backend(2, good.port)],
          }),
          listener(2, onlyDeniedPort, {
            backends: [
              backend(3, redis.port, { address: '127.0.0.9' }),
              backend(4, 80, { address: '169.254.169.254' }),
            ],
          }),
          // Its first backend is itself: dialling it would loop through this node until sockets run out.
          listener(3, selfPort, { backends: [backend(5, selfPort), backend(6, good.port)] }),
        ],
        { backendDeny: [{ cidr: '127.0.0.1/32', port: redis.port }] },
      ),
    );
  });
  afterAll(async () => {
    await node.close();
    await redis.close();
    await good.close();
  });

  it('counts what it left out, by reason', async () => {
    const text = await node.metrics.registry.getSingleMetricAsString('slb_l4_backend_denied_total');
    expect(text).toMatch(/slb_l4_backend_denied_total\{reason="cloud_endpoint"\} 2/);
    expect(text).toMatch(/slb_l4_backend_denied_total\{reason="link_local"\} 1/);
    expect(text).toMatch(/slb_l4_backend_denied_total\{reason="self_loop"\} 1/);
  });

  it('sends every connection to the allowed backend and none to the denied one', async () => {
    for (let i = 0; i < 20; i++) expect(await whoAnswers(mixedPort)).toBe('good');
    for (let i = 0; i < 5; i++) expect(await whoAnswers(selfPort)).toBe('good');
    expect(redis.connections()).toBe(0);
  }, 30_000);

  it('closes a client whose listener has only denied backends, without dialling them', async () => {
    await expect(whoAnswers(onlyDeniedPort)).rejects.toThrow();
    expect(redis.connections()).toBe(0);
  }, 30_000);
});

describe('L4 node: a new deny set in a delta', () => {
  const node = newNode();
  let redis: Awaited<ReturnType<typeof idServer>>;
  let good: Awaited<ReturnType<typeof idServer>>;
  let port = 0;

  beforeAll(async () => {
    redis = await idServer('redis');
    good = await idServer('good');
    port = await freePort();
  });
  afterAll(async () => {
    await node.close();
    await redis.close();
    await good.close();
  });

  it('reaches a listener whose config is the very object it already runs', async () => {
    const l = listener(1, port, { scheduler: 'rr', backends: [backend(1, redis.port), backend(2, good.port)] });
    const first = snapshot(1, [l]);
    await node.apply(first);
    const before = new Set<string>();
    for (let i = 0; i < 4; i++) before.add(await whoAnswers(port));
    expect(before).toEqual(new Set(['redis', 'good']));
    // What the control channel makes of a delta with only `backendDeny`: the same listener objects, applied whole.
    await node.apply({ ...first, version: 2, backendDeny: [{ cidr: '127.0.0.1/32', port: redis.port }] });
    const seen = redis.connections();
    for (let i = 0; i < 6; i++) expect(await whoAnswers(port)).toBe('good');
    expect(redis.connections()).toBe(seen);
  }, 30_000);
});
