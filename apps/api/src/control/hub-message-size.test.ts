import { loadBalancers, nodes, servers } from '@slb/db';
import { createTestDb, type TestDb } from '@slb/test-support/test-db';
import { eq } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { FakeSocket, registered, settle, startHub } from '../../test/hub-fakes.js';
import { ManualClock } from './clock.js';
import type { ControlHub } from './hub.js';

// A config larger than the channel's message limit: the node would drop the connection on it, reconnect, and
// be sent it again forever. The controller refuses to send it instead, and says why.

async function connect(hub: ControlHub): Promise<FakeSocket> {
  const ws = new FakeSocket();
  registered(hub, 'l4-a', 'l4', '127.0.0.11');
  hub.attach(ws as unknown as WebSocket, { nodeId: 'l4-a', kind: 'l4', address: '127.0.0.11' });
  const hello = { type: 'hello', nodeId: 'l4-a', kind: 'l4', address: '127.0.0.11', capacity: 100, appliedVersion: 0 };
  ws.emit('message', Buffer.from(JSON.stringify(hello)), false);
  await settle(hub);
  return ws;
}

describe('control hub: a config over the message limit', () => {
  let t: TestDb;
  let hub: ControlHub;
  afterEach(() => {
    hub?.close();
    t?.close();
  });

  it('is not sent: the node gets the reason, its row the error, and the next change that fits is sent whole', async () => {
    t = createTestDb();
    const group = t.group();
    for (let i = 0; i < 20; i++) t.server(group, `10.0.0.${i + 1}`, 8080);
    t.listener({ serverGroupId: group, port: 80 });
    const clock = new ManualClock();
    hub = await startHub(t, { maxMessageBytes: 2000, clock });

    const ws = await connect(hub);
    expect(ws.sent.map((m) => m.type)).toEqual(['error']);
    expect(ws.sent[0]!.reason).toMatch(/^config of \d+ bytes exceeds the control channel limit of 2000 bytes$/);
    const row = t.db.select().from(nodes).where(eq(nodes.id, 'l4-a')).get();
    expect(row?.lastError).toMatch(/exceeds the control channel limit/);

    // Nothing is resent until the config changes (the node heartbeating all along); then it fits and goes
    // out as a full snapshot.
    const load = { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 };
    for (let i = 0; i < 5; i++) {
      clock.advance(1_000);
      await settle(hub);
      ws.emit('message', Buffer.from(JSON.stringify({ type: 'heartbeat', load })), false);
      await settle(hub);
    }
    expect(ws.sent).toHaveLength(1);
    t.db.delete(servers).where(eq(servers.serverGroupId, group)).run();
    t.db.update(loadBalancers).set({ configVersion: 2 }).where(eq(loadBalancers.id, t.lbId)).run();
    hub.changed();
    clock.flush();
    await settle(hub);
    expect(ws.sent.map((m) => m.type)).toEqual(['error', 'snapshot']);
  });
});
