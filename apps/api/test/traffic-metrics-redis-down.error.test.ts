import { randomUUID } from 'node:crypto';
import { eventually, freePort, type Proc, startRedis } from '@slb/test-support/fleet';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectFake, type FakeNode, heldListeners, settle } from './fake-node.js';
import { call, makeApp, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

// A Redis outage must never hold up the control channel: heartbeats are still taken and configs still
// pushed, the traffic samples are dropped and counted, and the metrics routes say 503, not 500.

const id = `test-${randomUUID()}`;
let redis: Proc;
let t: TestApp;
let port: number;

beforeAll(async () => {
  port = await freePort();
  redis = startRedis(port);
  t = await makeApp(undefined, {
    nodeToken: 'node-token-0123456789abcdef',
    redisUrl: `redis://127.0.0.1:${port}`,
    metricsKeyPrefix: `${id}:metrics`,
    namespaceOverrides: { healthQueue: id, healthKeyPrefix: `${id}:health`, sessionSyncPrefix: `${id}:sync` },
  });
  await eventually('Redis ready', async () =>
    (await call(t.app, null, 'GET', '/readyz')).status === 200 ? true : undefined,
  );
}, 30_000);

afterAll(async () => {
  await t?.close();
  await redis?.stop('SIGKILL');
});

const dropped = async () => {
  const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
  return Number(/slb_api_traffic_samples_total\{outcome="dropped"\} (\d+)/.exec(text)?.[1] ?? Number.NaN);
};

it('keeps taking heartbeats and pushing configs while Redis is down, counting the dropped samples', async () => {
  const { token } = await newTenant(t.app);
  const { lbId, sgId } = await newLoadBalancer(t.app, token);
  const lsn = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
    protocol: 'tcp',
    port: 7001,
    serverGroupId: sgId,
  });
  const node: FakeNode = await connectFake(t, { nodeId: 'l4-a', kind: 'l4', address: '127.0.0.11' });
  await settle();
  let conns = 0;
  const beat = () => {
    conns += 5;
    node.say({
      type: 'heartbeat',
      load: { activeConnections: 1, newConnectionsPerSecond: 5, requestsPerSecond: 0 },
      traffic: {
        bootId: 'boot',
        listeners: [{ id: lsn.body.id, conns, bytesIn: conns, bytesOut: conns, drops: 0, active: 1 }],
      },
    });
  };
  beat();
  beat();
  expect(await dropped()).toBe(0);

  await redis.stop('SIGKILL');
  const before = (await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}`)).body;
  beat();
  beat();
  // Written to a connection ioredis has not yet seen die, or refused at once once it has: dropped either way.
  await eventually('samples dropped', async () => ((await dropped()) >= 1 ? true : undefined), 10_000, 100);
  beat();
  expect(await dropped()).toBeGreaterThanOrEqual(2);
  // Heartbeats were taken: the node is online with the load it said last.
  const nodes = await call(t.app, 'test-admin-token-0123456789', 'GET', '/v1/nodes');
  expect(nodes.body.items.find((n: { id: string }) => n.id === 'l4-a')).toMatchObject({ status: 'online' });
  // Configs still flow: a new listener reaches the node.
  const second = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
    protocol: 'tcp',
    port: 7002,
    serverGroupId: sgId,
  });
  expect(second.status).toBe(201);
  await settle();
  expect(heldListeners(node).has(second.body.id)).toBe(true);
  expect(before.id).toBe(lbId);
  // Reads say the store is unavailable: 503 problem+json, not a 500.
  const res = await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}/metrics`);
  expect(res.status).toBe(503);
  expect(res.headers['content-type']).toContain('application/problem+json');
  expect(res.body.detail).toContain('unavailable');

  // Redis back: samples are written again.
  redis = startRedis(port);
  await eventually(
    'Redis back',
    async () => ((await call(t.app, null, 'GET', '/readyz')).status === 200 ? true : undefined),
    20_000,
    100,
  );
  const gone = await dropped();
  beat();
  await new Promise((r) => setTimeout(r, 100)); // a fixed window on purpose: nothing more is dropped in it
  expect(await dropped()).toBe(gone);
  expect((await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}/metrics`)).status).toBe(200);
}, 60_000);
