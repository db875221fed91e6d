import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectFake, type FakeNode, heldListeners, hubSettled, settle } from './fake-node.js';
import { ADMIN_TOKEN, call, makeApp, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

// Every LB's listeners bind its own VIP on the L4 nodes that host it: all of them at once where every
// host can share the VIP:port (SO_REUSEPORT), one of them otherwise, the other taking over when its
// channel closes. A bind a node keeps failing (and retrying) is reported in its heartbeats and shown.

let t: TestApp;
beforeEach(async () => {
  t = await makeApp();
});
afterEach(async () => {
  t.app.controlHub.close();
  await t.close();
});

async function tcpListener(token: string, lb: { lbId: string; sgId: string }, port: number) {
  const res = await call(t.app, token, 'POST', `/v1/load-balancers/${lb.lbId}/listeners`, {
    protocol: 'tcp',
    port,
    serverGroupId: lb.sgId,
  });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

const lbView = async (token: string, lbId: string) =>
  (await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}`)).body;

async function ackAll(...nodes: FakeNode[]) {
  await settle();
  for (const n of nodes) if (n.unacked.length > 0) n.ack();
  await settle();
}

describe('VIPs on the L4 nodes', () => {
  it('two tenants on the same port bind their own VIPs on every node that can share them (active-active)', async () => {
    const a = await connectFake(t, { nodeId: 'l4-a', kind: 'l4', address: '127.0.0.81', reusePort: true });
    const b = await connectFake(t, { nodeId: 'l4-b', kind: 'l4', address: '127.0.0.82', reusePort: true });
    const one = await newTenant(t.app, 'one');
    const two = await newTenant(t.app, 'two');
    const lb1 = await newLoadBalancer(t.app, one.token);
    const lb2 = await newLoadBalancer(t.app, two.token);
    const l1 = await tcpListener(one.token, lb1, 443);
    const l2 = await tcpListener(two.token, lb2, 443);
    await ackAll(a, b);
    const v1 = await lbView(one.token, lb1.lbId);
    const v2 = await lbView(two.token, lb2.lbId);
    expect(v1.address).not.toBe(v2.address);
    for (const node of [a, b]) {
      const held = heldListeners(node);
      expect(held.get(l1)).toMatchObject({ port: 443, bindAddresses: [v1.address], reusePort: true });
      expect(held.get(l2)).toMatchObject({ port: 443, bindAddresses: [v2.address], reusePort: true });
    }
    expect(v1.status).toBe('active');
    expect(v1.addresses).toEqual([v1.address]);
    expect(v1.nodes.filter((n: any) => n.kind === 'l4').map((n: any) => n.role)).toEqual(['active', 'active']);
    const nodes = await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes');
    expect(nodes.body.items.map((n: any) => n.vipMode)).toEqual(['active-active', 'active-active']);
  });

  it('without SO_REUSEPORT one node binds the VIP and the other takes it over when its channel closes', async () => {
    const a = await connectFake(t, { nodeId: 'l4-a', kind: 'l4', address: '127.0.0.81', reusePort: false });
    const b = await connectFake(t, { nodeId: 'l4-b', kind: 'l4', address: '127.0.0.82', reusePort: false });
    const { token } = await newTenant(t.app);
    const lb = await newLoadBalancer(t.app, token);
    const id = await tcpListener(token, lb, 80);
    await ackAll(a, b);
    const before = await lbView(token, lb.lbId);
    expect(before.status).toBe('active');
    const roles = Object.fromEntries(before.nodes.map((n: any) => [n.nodeId, n.role]));
    expect(Object.values(roles).sort()).toEqual(['active', 'standby']);
    const [binder, standby] = roles['l4-a'] === 'active' ? [a, b] : [b, a];
    expect(heldListeners(binder).get(id)).toMatchObject({ bindAddresses: [before.address] });
    expect(heldListeners(binder).get(id).reusePort).toBeUndefined();
    expect(heldListeners(standby).has(id)).toBe(false);
    const nodes = await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes');
    expect(nodes.body.items.map((n: any) => n.vipMode)).toEqual(['active-standby', 'active-standby']);

    (t.app.controlHub as any).sessions.get(roles['l4-a'] === 'active' ? 'l4-a' : 'l4-b').ws.close();
    await ackAll(standby);
    expect(heldListeners(standby).get(id)).toMatchObject({ bindAddresses: [before.address] });
    const after = await lbView(token, lb.lbId);
    const standbyId = standby === a ? 'l4-a' : 'l4-b';
    expect(after.nodes.find((n: any) => n.nodeId === standbyId).role).toBe('active');
  });

  // After a controller restart the first node back is given every VIP, while the other node (not back yet)
  // still serves its own: once it says so in its hello, its VIPs go back to it, whether or not the first
  // node already acked that it cannot bind them.
  it.each([
    ['after the first node back reported it cannot bind it', true],
    ['before the first node back acked anything', false],
  ])('after a controller restart a VIP goes back to the node that still binds it, %s', async (_when, firstAcks) => {
    const { token } = await newTenant(t.app);
    const lb = await newLoadBalancer(t.app, token);
    const id = await tcpListener(token, lb, 80);
    const { address } = await lbView(token, lb.lbId);
    const first = await connectFake(t, { nodeId: 'l4-a', kind: 'l4', address: '127.0.0.81', reusePort: false });
    await settle();
    expect(heldListeners(first).has(id)).toBe(true);
    if (firstAcks) {
      first.say({
        type: 'ack',
        version: first.unacked.at(-1),
        failedListeners: [{ listenerId: id, reason: `cannot bind tcp ${address}:80: EADDRINUSE` }],
      });
      first.unacked = [];
    }
    const holder = await connectFake(t, {
      nodeId: 'l4-b',
      kind: 'l4',
      address: '127.0.0.82',
      reusePort: false,
      boundVips: [address],
    });
    await ackAll(first, holder);
    expect(heldListeners(holder).has(id)).toBe(true);
    expect(heldListeners(first).has(id)).toBe(false);
    const view = await lbView(token, lb.lbId);
    expect(view.nodes.find((n: any) => n.nodeId === 'l4-b').role).toBe('active');
  });

  it('a bind the node keeps retrying is shown on the LB and the listener until a heartbeat says it healed', async () => {
    const a = await connectFake(t, { nodeId: 'l4-a', kind: 'l4', address: '127.0.0.81', reusePort: true });
    const { token } = await newTenant(t.app);
    const lb = await newLoadBalancer(t.app, token);
    const id = await tcpListener(token, lb, 7001);
    await ackAll(a);
    expect((await lbView(token, lb.lbId)).status).toBe('active');
    const load = { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 };
    const reason = 'cannot bind tcp 127.1.0.1:7001: EADDRINUSE';
    a.say({ type: 'heartbeat', load, failedListeners: [{ listenerId: id, reason }] });
    const failing = await lbView(token, lb.lbId);
    expect(failing.status).toBe('provisioning');
    expect(failing.nodes[0].error).toBe(`${id}: ${reason}`);
    const listener = await call(t.app, token, 'GET', `/v1/load-balancers/${lb.lbId}/listeners/${id}`);
    expect(listener.body.bindErrors).toEqual([{ nodeId: 'l4-a', reason }]);
    a.say({ type: 'heartbeat', load, failedListeners: [] });
    const healed = await lbView(token, lb.lbId);
    expect(healed.status).toBe('active');
    expect(healed.nodes[0].error).toBeUndefined();
    expect((await call(t.app, token, 'GET', `/v1/load-balancers/${lb.lbId}/listeners/${id}`)).body.bindErrors).toEqual(
      [],
    );
  });

  it("a bind failure in an ack is the node's lastError until a heartbeat says the retry bound it", async () => {
    const a = await connectFake(t, { nodeId: 'l4-a', kind: 'l4', address: '127.0.0.81', reusePort: true });
    const { token } = await newTenant(t.app);
    const lb = await newLoadBalancer(t.app, token);
    const id = await tcpListener(token, lb, 7001);
    await settle();
    const version = a.unacked.at(-1)!;
    const reason = 'cannot bind tcp 127.1.0.1:7001: EADDRINUSE';
    a.unacked = [];
    a.say({ type: 'ack', version, failedListeners: [{ listenerId: id, reason }] });
    await hubSettled(t);
    const lastError = async () => (await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes/l4-a')).body.lastError;
    expect(await lastError()).toBe(`version ${version}: 1 listener(s) not applied: ${id}: ${reason}`);
    const load = { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 };
    a.say({ type: 'heartbeat', load, failedListeners: [{ listenerId: id, reason }] });
    await hubSettled(t);
    expect(await lastError()).toBe(`version ${version}: 1 listener(s) not applied: ${id}: ${reason}`);
    a.say({ type: 'heartbeat', load, failedListeners: [] });
    await hubSettled(t);
    expect(await lastError()).toBeNull();
    expect((await lbView(token, lb.lbId)).status).toBe('active');
  });
});
