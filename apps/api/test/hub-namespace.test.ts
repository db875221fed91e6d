import { Value } from '@sinclair/typebox/value';
import { L7NodeSnapshot, NodeSnapshot } from '@slb/model';
import { afterEach, expect, it } from 'vitest';
import { connectFake } from './fake-node.js';
import { makeApp, type TestApp } from './helpers.js';

// The nodes learn their deployment's session-sync namespace from their first snapshot, so nodes of two
// deployments on one Redis never share keys and nobody sets SLB_SESSION_SYNC_PREFIX by hand.

const connect = async (t: TestApp, nodeId: string, kind: 'l4' | 'l7', address: string): Promise<any[]> =>
  (await connectFake(t, { nodeId, kind, address })).sent;

const apps: TestApp[] = [];
afterEach(async () => {
  for (const t of apps.splice(0)) await t.close();
});

async function firstSnapshots(t: TestApp): Promise<{ l4: any; l7: any }> {
  const l4 = await connect(t, 'l4-a', 'l4', '127.0.0.11');
  const l7 = await connect(t, 'l7-a', 'l7', '127.0.0.21');
  // No wait: a node's first snapshot is sent as it says hello.
  return {
    l4: l4.find((m) => m.type === 'snapshot')?.snapshot,
    l7: l7.find((m) => m.type === 'snapshot')?.snapshot,
  };
}

it("sends the deployment's session-sync prefix in every node's first snapshot, one per deployment", async () => {
  const prefixes: string[] = [];
  for (let i = 0; i < 2; i++) {
    const t = await makeApp(undefined, { nodeToken: 'node-token-0123456789abcdef' });
    apps.push(t);
    const { l4, l7 } = await firstSnapshots(t);
    expect(Value.Check(NodeSnapshot, l4)).toBe(true);
    expect(Value.Check(L7NodeSnapshot, l7)).toBe(true);
    expect(l4.sessionSyncPrefix).toBe(`${t.app.namespace.clusterId}:sync`);
    expect(l7.sessionSyncPrefix).toBe(l4.sessionSyncPrefix);
    prefixes.push(l4.sessionSyncPrefix);
  }
  expect(prefixes[0]).not.toBe(prefixes[1]);
});

it("sends the operator's SLB_SESSION_SYNC_PREFIX instead when the API has one", async () => {
  const t = await makeApp(undefined, {
    nodeToken: 'node-token-0123456789abcdef',
    namespaceOverrides: { sessionSyncPrefix: 'ops:sync' },
  });
  apps.push(t);
  expect((await firstSnapshots(t)).l4.sessionSyncPrefix).toBe('ops:sync');
});
