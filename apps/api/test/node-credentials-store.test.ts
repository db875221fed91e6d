import { engines, type TestStore } from '@slb/test-support/stores';
import { afterEach, describe, expect, it } from 'vitest';
import { identityOf, redeemJoinToken } from '../src/control/node-credentials.js';
import { NodeService } from '../src/services/nodes.js';

// A node's join token and credential on both engines (issue 23): a token is redeemed once, even by two
// requests at the same moment (two replicas), and the credential then names the node.

const all = await engines('apps/api/test/node-credentials-store.test.ts');
let open: TestStore | undefined;
afterEach(async () => {
  await open?.drop();
  open = undefined;
});

describe.each(all)('node credentials on $name', (engine) => {
  it.skipIf(!engine.available)('redeems a join token once, whoever asks at the same moment', async () => {
    open = await engine.open();
    const { store } = open;
    const node = await new NodeService(store).register({ kind: 'l4', address: '127.0.0.31' });
    const results = await Promise.all([redeemJoinToken(store, node.joinToken), redeemJoinToken(store, node.joinToken)]);
    const redeemed = results.filter((r) => r !== null);
    expect(redeemed).toHaveLength(1);
    expect(await identityOf(store, redeemed[0]?.credential ?? '')).toEqual({
      nodeId: node.id,
      kind: 'l4',
      address: '127.0.0.31',
    });
    expect(await redeemJoinToken(store, node.joinToken)).toBeNull();
    expect(await identityOf(store, 'slbn_made-up')).toBeNull();
  });
});
