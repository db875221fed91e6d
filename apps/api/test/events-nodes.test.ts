import { afterEach, beforeEach, expect, it } from 'vitest';
import { connectFake, type FakeNode, settle } from './fake-node.js';
import { call, makeApp, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

// `node` and `bind` events, as the control hub sees fake nodes come, go and fail to bind.

const load = { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 };

let t: TestApp;
beforeEach(async () => {
  t = await makeApp();
});
afterEach(async () => {
  t.app.controlHub.close();
  await t.close();
});

async function eventsOf(token: string, lbId: string, kind: string): Promise<any[]> {
  await settle();
  const res = await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}/events?kind=${kind}`);
  expect(res.status).toBe(200);
  return res.body.items;
}

function ackAll(node: FakeNode, failedListeners: { listenerId: string; reason: string }[] = []): void {
  const version = node.unacked.at(-1);
  node.unacked = [];
  node.say({ type: 'ack', version, failedListeners });
}

it('records L4 nodes beginning and ceasing to serve an LB, once per change', async () => {
  const { token } = await newTenant(t.app);
  await connectFake(t, { nodeId: 'l4-a', kind: 'l4', address: '127.0.0.81' });
  await connectFake(t, { nodeId: 'l4-b', kind: 'l4', address: '127.0.0.82' });
  const { lbId } = await newLoadBalancer(t.app, token);
  await settle();

  const joined = await eventsOf(token, lbId, 'node');
  expect(joined.map((e) => e.summary).sort()).toEqual([
    'L4 node l4-a (127.0.0.81) began serving',
    'L4 node l4-b (127.0.0.82) began serving',
  ]);
  expect(joined[0]).toMatchObject({ kind: 'node', actor: null, operation: null, detail: { change: 'joined' } });

  // More writes to the LB recompile it; nobody joined or left, so nothing more is recorded.
  await call(t.app, token, 'PATCH', `/v1/load-balancers/${lbId}`, { name: 'renamed' });
  expect(await eventsOf(token, lbId, 'node')).toHaveLength(2);

  t.app.controlHub.disconnect('l4-b', 'test: node deleted');
  const afterLeave = await eventsOf(token, lbId, 'node');
  expect(afterLeave).toHaveLength(3);
  expect(afterLeave[0]).toMatchObject({
    summary: 'L4 node l4-b (127.0.0.82) stopped serving',
    resourceId: 'l4-b',
    detail: { nodeId: 'l4-b', change: 'left' },
  });

  // The last node going: nothing is left to push to, the LB is still left.
  t.app.controlHub.disconnect('l4-a', 'test: node deleted');
  const last = await eventsOf(token, lbId, 'node');
  expect(last[0].summary).toBe('L4 node l4-a (127.0.0.81) stopped serving');
  expect(last).toHaveLength(4);
});

it('records a listener a node cannot bind and when it binds again, not per heartbeat', async () => {
  const { token } = await newTenant(t.app);
  const node = await connectFake(t, { nodeId: 'l4-a', kind: 'l4', address: '127.0.0.81' });
  const { lbId, sgId } = await newLoadBalancer(t.app, token);
  const other = await newLoadBalancer(t.app, token);
  const lsn = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
    protocol: 'tcp',
    port: 7101,
    serverGroupId: sgId,
  });
  await settle();
  const failure = { listenerId: lsn.body.id, reason: 'cannot bind: EADDRINUSE' };
  ackAll(node, [failure]);
  for (let i = 0; i < 3; i++) node.say({ type: 'heartbeat', load, failedListeners: [failure] });

  const failing = await eventsOf(token, lbId, 'bind');
  expect(failing).toHaveLength(1);
  expect(failing[0]).toMatchObject({
    summary: 'node l4-a cannot bind listener tcp:7101: cannot bind: EADDRINUSE',
    resourceId: lsn.body.id,
    detail: { nodeId: 'l4-a', listenerId: lsn.body.id, failing: true },
  });
  expect(await eventsOf(token, other.lbId, 'bind')).toEqual([]);

  node.say({ type: 'heartbeat', load, failedListeners: [] });
  node.say({ type: 'heartbeat', load, failedListeners: [] });
  const healed = await eventsOf(token, lbId, 'bind');
  expect(healed).toHaveLength(2);
  expect(healed[0]).toMatchObject({
    summary: 'node l4-a binds listener tcp:7101 again',
    detail: { failing: false, previousReason: 'cannot bind: EADDRINUSE' },
  });
});

it('records L7 nodes serving an LB once it has an HTTP listener, and leaving when it has none', async () => {
  const { token } = await newTenant(t.app);
  await connectFake(t, { nodeId: 'l4-a', kind: 'l4', address: '127.0.0.81' });
  await connectFake(t, { nodeId: 'l7-a', kind: 'l7', address: '127.0.0.91' });
  const { lbId, sgId } = await newLoadBalancer(t.app, token);
  await settle();
  const l7 = async () => (await eventsOf(token, lbId, 'node')).filter((e) => e.detail.nodeKind === 'l7');
  expect(await l7()).toEqual([]);
  const http = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
    protocol: 'http',
    port: 8080,
    serverGroupId: sgId,
  });
  expect(http.status).toBe(201);
  expect((await l7()).map((e) => e.summary)).toEqual(['L7 node l7-a (127.0.0.91) began serving']);
  await call(t.app, token, 'DELETE', `/v1/load-balancers/${lbId}/listeners/${http.body.id}`);
  expect((await l7()).map((e) => e.summary)).toEqual([
    'L7 node l7-a (127.0.0.91) stopped serving',
    'L7 node l7-a (127.0.0.91) began serving',
  ]);
});
