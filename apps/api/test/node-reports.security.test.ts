import { Value } from '@sinclair/typebox/value';
import { ControllerMessage } from '@slb/model';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectFake, type FakeNode, settle } from './fake-node.js';
import { ADMIN_TOKEN, call, makeApp, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

// What a node says about itself is bounded: its claimed config version, its load and its capacity.

describe('node reports are bounded', () => {
  let t: TestApp;
  let token: string;
  let liar: FakeNode;
  let honest: FakeNode;

  beforeEach(async () => {
    t = await makeApp();
    ({ token } = await newTenant(t.app));
    liar = await connectFake(t, {
      nodeId: 'l4-liar',
      kind: 'l4',
      address: '127.0.0.81',
      capacity: 1000,
      appliedVersion: Number.MAX_SAFE_INTEGER,
    });
    honest = await connectFake(t, { nodeId: 'l4-honest', kind: 'l4', address: '127.0.0.82' });
    await settle();
  });
  afterEach(async () => {
    t.app.controlHub.close();
    await t.close();
  });

  it('a hello with a huge applied version changes nothing: later configs still reach every node', async () => {
    const { lbId, sgId } = await newLoadBalancer(t.app, token);
    await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
      protocol: 'tcp',
      port: 7101,
      serverGroupId: sgId,
    });
    await settle();
    await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
      protocol: 'tcp',
      port: 7102,
      serverGroupId: sgId,
    });
    await settle();
    for (const node of [liar, honest]) {
      expect(node.sent.length).toBeGreaterThan(0);
      // Every message a node got is one it accepts (a version past 2^53-1 is refused by the schema).
      for (const m of node.sent) expect(Value.Check(ControllerMessage, m)).toBe(true);
      expect(node.sent.every((m) => m.type !== 'error')).toBe(true);
      node.ack();
    }
    const lb = await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}`);
    expect(lb.body.status).toBe('active');
    const row = await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes/l4-liar');
    expect(row.body.appliedConfigVersion).toBeLessThan(Number.MAX_SAFE_INTEGER);
    expect(row.body.lastError).toBeNull();
  });

  it('the hello does not set capacity, and heartbeats are clamped', async () => {
    liar.say({
      type: 'heartbeat',
      load: { activeConnections: 1e15, newConnectionsPerSecond: 1e300, requestsPerSecond: 1e300 },
    });
    const row = await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes/l4-liar');
    expect(row.body.capacityWeight).toBe(100);
    expect(row.body.load.activeConnections).toBeLessThanOrEqual(10_000_000);
    expect(row.body.load.newConnectionsPerSecond).toBeLessThanOrEqual(1_000_000);
    expect(row.body.load.requestsPerSecond).toBeLessThanOrEqual(1_000_000);
  });
});
