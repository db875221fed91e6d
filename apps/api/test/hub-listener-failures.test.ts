import { afterEach, beforeEach, expect, it } from 'vitest';
import { hubSettled } from './fake-node.js';
import { ADMIN_TOKEN, call, makeApp, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

// A node that applied a config but could not build one listener of it names that listener in its ack: the
// listener's LB stays `provisioning` on that node and the node shows why, while every other LB the same
// config carried is `active`.

interface FakeNode {
  versions: number[];
  say(message: unknown): void;
}

function connect(t: TestApp, nodeId: string, address: string, hello: Record<string, unknown> = {}): FakeNode {
  const handlers: Record<string, (...args: unknown[]) => void> = {};
  const node: FakeNode = {
    versions: [],
    say: (message) => handlers.message?.(Buffer.from(JSON.stringify(message)), false),
  };
  const ws = {
    OPEN: 1,
    CLOSED: 3,
    readyState: 1,
    on: (event: string, fn: (...args: unknown[]) => void) => {
      handlers[event] = fn;
    },
    close: () => undefined,
    send: (text: string) => {
      const m = JSON.parse(text);
      const v = m.version ?? m.snapshot?.version;
      if (typeof v === 'number') node.versions.push(v);
    },
  };
  t.app.controlHub.attach(ws as never);
  node.say({ type: 'hello', nodeId, kind: 'l4', address, capacity: 100, appliedVersion: 0, ...hello });
  return node;
}

/** The write's hooks run, then the hub's recompile and the node rows' writes. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setTimeout(r, 5));
  }
  await hubSettled(t);
}

let t: TestApp;
beforeEach(async () => {
  t = await makeApp();
});
afterEach(async () => {
  t.app.controlHub.close();
  await t.close();
});

it("an ack naming a failed listener keeps that listener's LB provisioning, and only that one", async () => {
  const { token } = await newTenant(t.app);
  const node = connect(t, 'l4-a', '127.0.0.81');
  const a = await newLoadBalancer(t.app, token);
  const b = await newLoadBalancer(t.app, token);
  const bad = await call(t.app, token, 'POST', `/v1/load-balancers/${a.lbId}/listeners`, {
    protocol: 'tcp',
    port: 7101,
    serverGroupId: a.sgId,
  });
  await call(t.app, token, 'POST', `/v1/load-balancers/${b.lbId}/listeners`, {
    protocol: 'tcp',
    port: 7102,
    serverGroupId: b.sgId,
  });
  await settle();
  const version = node.versions.at(-1);
  node.say({
    type: 'ack',
    version,
    failedListeners: [{ listenerId: bad.body.id, reason: 'cannot bind: EADDRINUSE' }],
  });
  await hubSettled(t);
  const status = async (lbId: string) => (await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}`)).body.status;
  expect(await status(a.lbId)).toBe('provisioning');
  expect(await status(b.lbId)).toBe('active');
  const shown = await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes/l4-a');
  expect(shown.body.lastError).toContain(bad.body.id);
  expect(shown.body.lastError).toContain('EADDRINUSE');

  // The listener changes; the node acks the new version without failures: active again.
  await call(t.app, token, 'PATCH', `/v1/load-balancers/${a.lbId}/listeners/${bad.body.id}`, { idleTimeout: 30 });
  await settle();
  expect(node.versions.at(-1)).toBeGreaterThan(version as number);
  node.say({ type: 'ack', version: node.versions.at(-1) });
  await hubSettled(t);
  expect(await status(a.lbId)).toBe('active');
  expect((await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes/l4-a')).body.lastError).toBeNull();
});

it('a node with more failures than its report has room for: the node says how many, named or not', async () => {
  const { token } = await newTenant(t.app);
  const node = connect(t, 'l4-a', '127.0.0.81');
  const a = await newLoadBalancer(t.app, token);
  const bad = await call(t.app, token, 'POST', `/v1/load-balancers/${a.lbId}/listeners`, {
    protocol: 'tcp',
    port: 7103,
    serverGroupId: a.sgId,
  });
  await settle();
  const failedListeners = [{ listenerId: bad.body.id, reason: 'cannot bind: EADDRINUSE' }];
  node.say({ type: 'ack', version: node.versions.at(-1), failedListeners, failedListenersOmitted: 1499 });
  await hubSettled(t);
  const lastError = async () => (await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes/l4-a')).body.lastError as string;
  expect(await lastError()).toContain('1500 listener(s) not applied (1499 not named');
  expect(await lastError()).toContain(bad.body.id);
  // A heartbeat with fewer unnamed failures updates it.
  const load = { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 };
  node.say({ type: 'heartbeat', load, failedListeners, failedListenersOmitted: 9 });
  await hubSettled(t);
  expect(await lastError()).toContain('10 listener(s) not applied (9 not named');
  node.say({ type: 'heartbeat', load, failedListeners });
  await hubSettled(t);
  expect(await lastError()).toMatch(/1 listener\(s\) not applied: /);
});

it('a node that rotates what its reports name: every LB of its failures turns provisioning within a round', async () => {
  const { token } = await newTenant(t.app);
  const node = connect(t, 'l4-a', '127.0.0.81', { rotatesFailures: true });
  const lbs: string[] = [];
  const failing: { listenerId: string; reason: string }[] = [];
  for (let i = 0; i < 4; i++) {
    const lb = await newLoadBalancer(t.app, token);
    const listener = await call(t.app, token, 'POST', `/v1/load-balancers/${lb.lbId}/listeners`, {
      protocol: 'tcp',
      port: 7201 + i,
      serverGroupId: lb.sgId,
    });
    lbs.push(lb.lbId);
    if (i < 3) failing.push({ listenerId: listener.body.id as string, reason: 'cannot bind: EADDRNOTAVAIL' });
  }
  await settle();
  const status = async (lbId: string) => (await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}`)).body.status;
  const statuses = () => Promise.all(lbs.map(status));
  const lastError = async () => (await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes/l4-a')).body.lastError as string;
  // Three failing listeners, one named per report (the rest had no room), the next one each time.
  node.say({ type: 'ack', version: node.versions.at(-1), failedListeners: [failing[0]], failedListenersOmitted: 2 });
  await hubSettled(t);
  expect(await statuses()).toEqual(['provisioning', 'active', 'active', 'active']);
  const load = { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 };
  node.say({ type: 'heartbeat', load, failedListeners: [failing[1]], failedListenersOmitted: 2 });
  await hubSettled(t);
  node.say({ type: 'heartbeat', load, failedListeners: [failing[2]], failedListenersOmitted: 2 });
  await hubSettled(t);
  expect(await statuses()).toEqual(['provisioning', 'provisioning', 'provisioning', 'active']);
  expect(await lastError()).toMatch(/^version \d+: 3 listener\(s\) not applied: /);
  // A listener this node was never sent is not gathered.
  const stranger = { listenerId: 'lsn-00000000000000000999', reason: 'cannot bind: EADDRNOTAVAIL' };
  node.say({ type: 'heartbeat', load, failedListeners: [stranger], failedListenersOmitted: 2 });
  await hubSettled(t);
  expect(await lastError()).toMatch(/^version \d+: 3 listener\(s\) not applied: /);
  expect(await lastError()).not.toContain(stranger.listenerId);
  // Every one healed: a report with room for all of them names none.
  node.say({ type: 'heartbeat', load, failedListeners: [] });
  await hubSettled(t);
  expect(await statuses()).toEqual(['active', 'active', 'active', 'active']);
  expect(await lastError()).toBeNull();
});
