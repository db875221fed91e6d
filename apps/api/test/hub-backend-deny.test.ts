import { Value } from '@sinclair/typebox/value';
import { L7NodeSnapshot, NodeSnapshot } from '@slb/model';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { connectFake } from './fake-node.js';
import { LOCAL_BACKEND_POLICY, makeApp, type TestApp } from './helpers.js';

// Every node's first snapshot carries the backend deny set (the cloud's endpoints and the node addresses),
// so the nodes refuse those backends on their own. The socket is an object recording what the hub sends.

const connect = async (t: TestApp, nodeId: string, kind: 'l4' | 'l7', address: string): Promise<any[]> =>
  (await connectFake(t, { nodeId, kind, address })).sent;

let t: TestApp;
beforeEach(async () => {
  t = await makeApp(undefined, {
    backendPolicy: {
      defaultNetworks: LOCAL_BACKEND_POLICY.defaultNetworks,
      deny: ['127.0.0.1:6379', '[fd00::5]:5432'],
    },
    nodeToken: 'node-token-0123456789abcdef',
  });
});
afterEach(() => t.close());

it("sends the deny set, with every node's address, in each node's first snapshot", async () => {
  const l4 = await connect(t, 'l4-a', 'l4', '127.0.0.11');
  const l7 = await connect(t, 'l7-a', 'l7', '127.0.0.21');
  // No wait: a node's first snapshot is sent as it says hello.
  const l4Snapshot = l4.find((m) => m.type === 'snapshot')?.snapshot;
  const l7Snapshot = l7.find((m) => m.type === 'snapshot')?.snapshot;
  expect(Value.Check(NodeSnapshot, l4Snapshot)).toBe(true);
  expect(Value.Check(L7NodeSnapshot, l7Snapshot)).toBe(true);
  const expected = [
    { cidr: '127.0.0.1/32', port: 6379 },
    { cidr: 'fd00::5/128', port: 5432 },
    { cidr: '127.0.0.11/32' },
  ];
  expect(l4Snapshot.backendDeny).toEqual(expect.arrayContaining(expected));
  expect(l7Snapshot.backendDeny).toEqual(expect.arrayContaining([...expected, { cidr: '127.0.0.21/32' }]));
});
