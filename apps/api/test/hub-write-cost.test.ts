import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LIVENESS_TICK_MS } from '../src/control/node-liveness.js';
import { connectFake, type FakeNode, settle } from './fake-node.js';
import { call, makeApp, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

/**
 * Issue #22: a write cost more the larger the fleet, since creating an LB or a listener made the hub diff
 * every LB for every node. The hub counts its work in LBs (compiled, diffed per node): a write to one LB
 * must cost the same with 3 LBs in the fleet as with 23.
 */
describe('control hub: the work of a write does not grow with the fleet', () => {
  let t: TestApp;
  let token: string;
  let nodes: FakeNode[];

  beforeEach(async () => {
    t = await makeApp();
    ({ token } = await newTenant(t.app));
    nodes = [
      await connectFake(t, { nodeId: 'l4-a', kind: 'l4', address: '127.0.0.81' }),
      await connectFake(t, { nodeId: 'l7-a', kind: 'l7', address: '127.0.0.82' }),
    ];
    await settle();
  });
  afterEach(async () => {
    t.app.controlHub.close();
    await t.close();
  });

  /** The nodes heard from: none goes offline (3 s), which would move LBs and cost a full diff. */
  const heartbeat = () => {
    const load = { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 };
    for (const n of nodes) n.say({ type: 'heartbeat', load });
  };

  /** The LBs compiled and diffed for one write, the nodes acked and heard from. */
  async function cost(write: () => Promise<unknown>) {
    await settle();
    for (const n of nodes) n.ack();
    heartbeat();
    const { work } = t.app.controlHub;
    const before = { ...work };
    await write();
    await settle();
    return { compiled: work.lbsCompiled - before.lbsCompiled, diffed: work.lbsDiffed - before.lbsDiffed };
  }

  let port = 8000;
  const addListener = (lb: { lbId: string; sgId: string }, protocol = 'tcp') =>
    call(t.app, token, 'POST', `/v1/load-balancers/${lb.lbId}/listeners`, {
      protocol,
      port: port++,
      serverGroupId: lb.sgId,
      healthCheck: { enabled: false },
    });

  /** A listener added to an LB, an LB created and given one, that LB deleted. */
  async function writes(lb: { lbId: string; sgId: string }) {
    const listener = await cost(() => addListener(lb));
    const http = await cost(() => addListener(lb, 'http'));
    let created = { lbId: '', sgId: '' };
    const lbCreated = await cost(async () => {
      created = await newLoadBalancer(t.app, token);
    });
    const firstListener = await cost(() => addListener(created));
    const deleted = await cost(() => call(t.app, token, 'DELETE', `/v1/load-balancers/${created.lbId}`));
    return { listener, http, lbCreated, firstListener, deleted };
  }

  it('a listener added, an LB created and deleted: the same LBs compiled and diffed at 3 LBs and at 23', async () => {
    const lbs = [await newLoadBalancer(t.app, token), await newLoadBalancer(t.app, token)];
    for (const lb of lbs) await addListener(lb);
    const small = await writes(lbs[0]!);
    for (let i = 0; i < 20; i++) {
      heartbeat();
      const lb = await newLoadBalancer(t.app, token);
      await addListener(lb);
      await addListener(lb, 'http');
    }
    const large = await writes(lbs[0]!);
    expect(large).toEqual(small);
    // One LB compiled, and diffed once for each of the two nodes.
    expect(small.listener).toEqual({ compiled: 1, diffed: 2 });
    expect(small.firstListener).toEqual({ compiled: 1, diffed: 2 });
  });

  it("a write and its acks leave its LB's runtime to publish to the other replicas, not the fleet's", async () => {
    const lbs: { lbId: string; sgId: string }[] = [];
    for (let i = 0; i < 5; i++) {
      const lb = await newLoadBalancer(t.app, token);
      await addListener(lb);
      lbs.push(lb);
    }
    await cost(async () => {}); // every node acked and heard from
    // Past a liveness tick: the first one after the nodes came counts them online, which touches every LB.
    await new Promise((r) => setTimeout(r, LIVENESS_TICK_MS + 50));
    const hub = t.app.controlHub;
    hub.takeRuntimeTouched();
    const lb = lbs[2]!;
    await addListener(lb);
    await settle();
    for (const n of nodes) n.ack();
    await settle();
    const touched = hub.takeRuntimeTouched();
    expect(touched === 'all' ? touched : [...touched]).toEqual([lb.lbId]);
    // A node gone can change any LB's runtime.
    hub.disconnect('l7-a', 'test: gone');
    expect(hub.takeRuntimeTouched()).toBe('all');
  });

  it('what a write to one LB sends is what a full diff would: a node sent everything anew holds the same', async () => {
    const a = await newLoadBalancer(t.app, token);
    await addListener(a);
    await addListener(a, 'http');
    const b = await newLoadBalancer(t.app, token);
    await addListener(b);
    await call(t.app, token, 'DELETE', `/v1/load-balancers/${b.lbId}`);
    await settle();
    // The same node again, on a new channel: it is sent a whole snapshot, built by a full diff.
    t.app.controlHub.disconnect('l4-a', 'test: reconnect');
    const who = { nodeId: 'l4-a', kind: 'l4', address: '127.0.0.81' } as const;
    const again = await connectFake(t, who, who);
    await settle();
    const held = (n: FakeNode) => {
      const ids = new Set<string>();
      for (const m of n.sent) {
        if (m.type === 'snapshot') ids.clear();
        for (const l of m.snapshot?.listeners ?? m.upsert ?? []) ids.add(l.id);
        for (const id of m.remove ?? []) ids.delete(id);
      }
      return [...ids].sort();
    };
    const listeners = (await call(t.app, token, 'GET', `/v1/load-balancers/${a.lbId}/listeners`)).body.items;
    expect(held(nodes[0]!)).toEqual(listeners.map((l: { id: string }) => l.id).sort());
    expect(held(nodes[0]!)).toEqual(held(again));
    expect(again.sent[0]?.type).toBe('snapshot');
  });
});
