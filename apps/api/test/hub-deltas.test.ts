import { eq, inArray, sql } from 'drizzle-orm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectFake, type FakeNode, heldListeners, settle } from './fake-node.js';
import { call, makeApp, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

/**
 * The hub's diffs per node, driven through the real API and hub with in-process node sessions: what each
 * node is sent after a write, and when the LB counts as converged. (The channel's socket is replaced by an
 * object that records messages; the WebSocket path itself is covered by control-channel.e2e.test.ts.)
 */
const connect = async (t: TestApp, nodeId: string, kind: 'l4' | 'l7', address: string): Promise<FakeNode> =>
  await connectFake(t, { nodeId, kind, address });

describe('control hub: per-node diffs', () => {
  let t: TestApp;
  let token: string;
  let l4: FakeNode;
  let l7: FakeNode;

  beforeEach(async () => {
    t = await makeApp();
    ({ token } = await newTenant(t.app));
    l4 = await connect(t, 'l4-a', 'l4', '127.0.0.71');
    l7 = await connect(t, 'l7-a', 'l7', '127.0.0.72');
    await settle(t);
  });
  afterEach(async () => {
    t.app.controlHub.close();
    await t.close();
  });

  async function lb(id: string) {
    return (await call(t.app, token, 'GET', `/v1/load-balancers/${id}`)).body;
  }

  it('a weight change sends each node only the listeners it touched, and the LB converges on their acks', async () => {
    const a = await newLoadBalancer(t.app, token);
    const b = await newLoadBalancer(t.app, token);
    const tcpA = await call(t.app, token, 'POST', `/v1/load-balancers/${a.lbId}/listeners`, {
      protocol: 'tcp',
      port: 7001,
      serverGroupId: a.sgId,
    });
    const httpA = await call(t.app, token, 'POST', `/v1/load-balancers/${a.lbId}/listeners`, {
      protocol: 'http',
      port: 7002,
      serverGroupId: a.sgId,
    });
    await call(t.app, token, 'POST', `/v1/load-balancers/${b.lbId}/listeners`, {
      protocol: 'tcp',
      port: 7003,
      serverGroupId: b.sgId,
    });
    await settle(t);
    l4.ack();
    l7.ack();
    expect((await lb(a.lbId)).status).toBe('active');
    const l4Before = l4.sent.length;
    const l7Before = l7.sent.length;

    await call(
      t.app,
      token,
      'PATCH',
      `/v1/load-balancers/${a.lbId}/server-groups/${a.sgId}/servers/${a.servers[0]!.id}`,
      {
        weight: 7,
      },
    );
    await settle(t);
    const toL4 = l4.sent.slice(l4Before);
    const toL7 = l7.sent.slice(l7Before);
    expect(toL4).toHaveLength(1);
    expect(toL4[0]).toMatchObject({ type: 'delta', remove: [] });
    expect(toL4[0].upsert.map((l: { id: string }) => l.id)).toEqual([tcpA.body.id]);
    expect(toL4[0].upsert[0].backends.find((s: { weight: number }) => s.weight === 7)).toBeDefined();
    expect(toL7).toHaveLength(1);
    expect(toL7[0].upsert.map((l: { id: string }) => l.id)).toEqual([httpA.body.id]);
    expect((await lb(a.lbId)).status).toBe('provisioning');
    expect((await lb(b.lbId)).status).toBe('active');
    // A has an HTTP listener, whose traffic passes the L7 node: the L4 ack alone is not enough.
    l4.ack();
    const waiting = await lb(a.lbId);
    expect(waiting.status).toBe('provisioning');
    expect(waiting.nodes).toEqual([
      { nodeId: 'l4-a', kind: 'l4', address: '127.0.0.71', online: true, converged: true, role: 'active' },
      { nodeId: 'l7-a', kind: 'l7', address: '127.0.0.72', online: true, converged: false },
    ]);
    expect(waiting.addresses).toEqual([waiting.address]); // its VIP, not the node's address
    l7.ack();
    expect((await lb(a.lbId)).status).toBe('active');
    // B has only a TCP listener: the L7 node does not serve it.
    expect((await lb(b.lbId)).nodes.map((n: { kind: string }) => n.kind)).toEqual(['l4']);
  });

  it('a deleted listener is removed from the node, and only it', async () => {
    const a = await newLoadBalancer(t.app, token);
    const keep = await call(t.app, token, 'POST', `/v1/load-balancers/${a.lbId}/listeners`, {
      protocol: 'tcp',
      port: 7011,
      serverGroupId: a.sgId,
    });
    const gone = await call(t.app, token, 'POST', `/v1/load-balancers/${a.lbId}/listeners`, {
      protocol: 'udp',
      port: 7012,
      serverGroupId: a.sgId,
    });
    await settle(t);
    l4.ack();
    const before = l4.sent.length;
    expect((await call(t.app, token, 'DELETE', `/v1/load-balancers/${a.lbId}/listeners/${gone.body.id}`)).status).toBe(
      204,
    );
    await settle(t);
    const deltas = l4.sent.slice(before);
    expect(deltas.flatMap((d) => d.remove)).toEqual([gone.body.id]);
    expect(deltas.flatMap((d) => d.upsert).map((l: { id: string }) => l.id)).not.toContain(gone.body.id);
    l4.ack();
    expect((await lb(a.lbId)).status).toBe('active');
    void keep;
  });

  it('two LBs on one port: each has its own VIP, so both are accepted; the same LB twice is refused', async () => {
    const a = await newLoadBalancer(t.app, token);
    const b = await newLoadBalancer(t.app, token);
    const other = await newTenant(t.app, 'other');
    const c = await newLoadBalancer(t.app, other.token);
    const body = (sgId: string, protocol = 'tcp') => ({ protocol, port: 7041, serverGroupId: sgId });
    const first = await call(t.app, token, 'POST', `/v1/load-balancers/${a.lbId}/listeners`, body(a.sgId));
    expect(first.status).toBe(201);
    const sameTenant = await call(t.app, token, 'POST', `/v1/load-balancers/${b.lbId}/listeners`, body(b.sgId, 'http'));
    expect(sameTenant.status).toBe(201);
    const otherTenant = await call(t.app, other.token, 'POST', `/v1/load-balancers/${c.lbId}/listeners`, body(c.sgId));
    expect(otherTenant.status).toBe(201);
    const again = await call(t.app, token, 'POST', `/v1/load-balancers/${a.lbId}/listeners`, body(a.sgId));
    expect(again.status).toBe(409);
    expect(again.body.detail).toContain(a.lbId);
    // UDP is another transport: the same number is free on the same LB.
    expect(
      (await call(t.app, token, 'POST', `/v1/load-balancers/${a.lbId}/listeners`, body(a.sgId, 'udp'))).status,
    ).toBe(201);
  });

  it('two LBs without a VIP (upgraded with their pools full) on one port share the node address: the second waits, and gets the port once the first lets it go', async () => {
    const a = await newLoadBalancer(t.app, token);
    const b = await newLoadBalancer(t.app, token);
    const first = await call(t.app, token, 'POST', `/v1/load-balancers/${a.lbId}/listeners`, {
      protocol: 'tcp',
      port: 7021,
      serverGroupId: a.sgId,
    });
    const second = await call(t.app, token, 'POST', `/v1/load-balancers/${b.lbId}/listeners`, {
      protocol: 'tcp',
      port: 7022,
      serverGroupId: b.sgId,
    });
    const { t: tables } = t.app.data;
    await t.app.data.write(async (q) => {
      await q.update(tables.listeners).set({ port: 7021 }).where(eq(tables.listeners.id, second.body.id));
      await q
        .update(tables.loadBalancers)
        .set({ address: null, addressPoolId: null, configVersion: sql`config_version + 1` })
        .where(inArray(tables.loadBalancers.id, [a.lbId, b.lbId]));
    });
    t.app.controlHub.changed();
    await settle(t);
    l4.ack();
    // What the node holds now (the second may have been sent on its own port before it moved onto the first's).
    const held = heldListeners(l4);
    expect(held.has(first.body.id)).toBe(true);
    expect(held.has(second.body.id)).toBe(false);
    expect((await lb(b.lbId)).status).toBe('provisioning');

    await call(t.app, token, 'DELETE', `/v1/load-balancers/${a.lbId}/listeners/${first.body.id}`);
    await settle(t);
    const last = l4.sent.at(-1);
    expect(last.remove).toEqual([first.body.id]);
    expect(last.upsert.map((l: { id: string }) => l.id)).toEqual([second.body.id]);
    l4.ack();
    expect((await lb(b.lbId)).status).toBe('active');
  });

  it('a change with nothing for a node still converges once the node acks what was in flight', async () => {
    const a = await newLoadBalancer(t.app, token);
    await call(t.app, token, 'POST', `/v1/load-balancers/${a.lbId}/listeners`, {
      protocol: 'tcp',
      port: 7031,
      serverGroupId: a.sgId,
    });
    await call(t.app, token, 'POST', `/v1/load-balancers/${a.lbId}/listeners`, {
      protocol: 'http',
      port: 7032,
      serverGroupId: a.sgId,
    });
    await settle(t);
    l4.ack();
    l7.ack();
    // A TCP-side change (sent to the L4 node, left unacked), then a name change that alters no node config.
    await call(
      t.app,
      token,
      'PATCH',
      `/v1/load-balancers/${a.lbId}/server-groups/${a.sgId}/servers/${a.servers[1]!.id}`,
      {
        weight: 3,
      },
    );
    await settle(t);
    const pending = l4.unacked.at(-1);
    l7.ack();
    const sentBefore = l4.sent.length;
    await call(t.app, token, 'PATCH', `/v1/load-balancers/${a.lbId}`, { name: 'renamed' });
    await settle(t);
    expect(l4.sent.length).toBe(sentBefore); // nothing new for the L4 node
    expect((await lb(a.lbId)).status).toBe('provisioning');
    l4.ack(pending);
    expect((await lb(a.lbId)).status).toBe('active');
  });
});
