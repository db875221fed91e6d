import { listeners, loadBalancers } from '@slb/db';
import { createTestDb, type TestDb } from '@slb/test-support/test-db';
import { eq } from 'drizzle-orm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { FakeSocket, registered, settle, startHub } from '../../test/hub-fakes.js';
import { ManualClock } from './clock.js';
import type { ControlHub } from './hub.js';

// A node that comes back to the replica that numbered its config (a restart on its saved file, a dropped
// channel) is sent what changed while it was away, not its whole config again.

interface Sent {
  type: string;
  version?: number;
  fromVersion?: number;
  upsert?: { id: string; port: number }[];
  remove?: string[];
  snapshot?: { version: number; epoch?: string; listeners: { id: string; port: number }[] };
}

const ID = 'l4-a';
const ADDRESS = '127.0.0.11';

let t: TestDb;
let clock: ManualClock;
let hub: ControlHub;

beforeEach(async () => {
  t = createTestDb();
  clock = new ManualClock();
  hub = await startHub(t, { clock });
  registered(hub, ID, 'l4', ADDRESS);
});
afterEach(() => {
  hub.close();
  t.close();
});

/** The node dials and says hello; `epoch` undefined: a node that does not keep epochs. */
async function connect(
  appliedVersion: number,
  epoch: string | undefined,
  nodeId = ID,
  extra: object = {},
): Promise<FakeSocket> {
  const ws = new FakeSocket();
  if (nodeId !== ID) registered(hub, nodeId, 'l4', '127.0.0.12');
  hub.attach(ws as unknown as WebSocket, { nodeId, kind: 'l4', address: nodeId === ID ? ADDRESS : '127.0.0.12' });
  const hello = {
    type: 'hello',
    nodeId,
    kind: 'l4',
    address: nodeId === ID ? ADDRESS : '127.0.0.12',
    capacity: 100,
    appliedVersion,
    ...(epoch === undefined ? {} : { appliedEpoch: epoch }),
    ...extra,
  };
  ws.emit('message', Buffer.from(JSON.stringify(hello)), false);
  await settle(hub);
  return ws;
}

const sent = (ws: FakeSocket) => ws.sent as unknown as Sent[];
const versionOf = (m: Sent) => (m.type === 'snapshot' ? m.snapshot!.version : m.version!);

async function ack(
  ws: FakeSocket,
  version: number,
  failedListeners: { listenerId: string; reason: string }[] = [],
): Promise<void> {
  const message = failedListeners.length === 0 ? { type: 'ack', version } : { type: 'ack', version, failedListeners };
  ws.emit('message', Buffer.from(JSON.stringify(message)), false);
  await settle(hub);
}

/** A listener added on the LB, its config version bumped, and the burst's recompile done. */
async function addListener(port: number): Promise<string> {
  const id = t.listener({ serverGroupId: t.group(), port });
  t.db.update(loadBalancers).set({ configVersion: port }).where(eq(loadBalancers.id, t.lbId)).run();
  hub.changed(t.lbId);
  clock.flush();
  await settle(hub);
  return id;
}

/** The node's first session: its snapshot, acked; the epoch it carried. */
async function firstSession(): Promise<{ ws: FakeSocket; version: number; epoch: string }> {
  const ws = await connect(0, '');
  const [first] = sent(ws);
  expect(first!.type).toBe('snapshot');
  const epoch = first!.snapshot!.epoch!;
  expect(epoch).toMatch(/^[0-9a-f]{32}$/);
  await ack(ws, first!.snapshot!.version);
  return { ws, version: first!.snapshot!.version, epoch };
}

describe('control hub: a node resumes its session', () => {
  it('is sent a delta from the version it holds, carrying what changed while it was away', async () => {
    const first = await addListener(80);
    const { ws, version, epoch } = await firstSession();
    expect(sent(ws)[0]!.snapshot!.listeners.map((l) => l.id)).toEqual([first]);
    ws.close();
    const added = await addListener(81);

    const back = await connect(version, epoch);
    const [resume] = sent(back);
    expect(resume).toMatchObject({ type: 'delta', fromVersion: version, remove: [] });
    expect(resume!.upsert!.map((l) => [l.id, l.port])).toEqual([[added, 81]]);
    expect(versionOf(resume!)).toBeGreaterThan(version);

    // Nothing changed since: still answered, with an empty delta the node acks.
    await ack(back, versionOf(resume!));
    back.close();
    const again = await connect(versionOf(resume!), epoch);
    expect(sent(again)).toHaveLength(1);
    expect(sent(again)[0]).toMatchObject({ type: 'delta', fromVersion: versionOf(resume!), upsert: [], remove: [] });

    // Resumed, the session diffs writes as before: the next one is a delta of its LB alone.
    await ack(again, versionOf(sent(again)[0]!));
    const third = await addListener(82);
    expect(sent(again).map((m) => m.type)).toEqual(['delta', 'delta']);
    expect(sent(again)[1]!.upsert!.map((l) => l.id)).toEqual([third]);
  });

  it('gets its whole config when the hello names another epoch or version, or it reported failing listeners', async () => {
    const lsn = await addListener(80);
    const { ws, version, epoch } = await firstSession();
    ws.close();

    // Another epoch: a version numbered by another controller process, however equal.
    const other = await connect(version, 'f'.repeat(32));
    expect(sent(other).map((m) => m.type)).toEqual(['snapshot']);
    const v2 = versionOf(sent(other)[0]!);
    await ack(other, v2);
    other.close();

    // An older version than the last sent (a save not yet written when the node stopped).
    const older = await connect(v2 - 1, epoch);
    expect(sent(older).map((m) => m.type)).toEqual(['snapshot']);
    const v3 = versionOf(sent(older)[0]!);
    // The node could not build a listener: a resume would restate nothing, so it is sent everything again.
    await ack(older, v3, [{ listenerId: lsn, reason: 'address in use' }]);
    older.close();

    const failing = await connect(v3, epoch);
    expect(sent(failing).map((m) => m.type)).toEqual(['snapshot']);
  });

  it('sends no epoch to a node that does not keep one, and never resumes it', async () => {
    await addListener(80);
    const ws = await connect(0, undefined);
    const [snapshot] = sent(ws);
    expect(snapshot!.type).toBe('snapshot');
    expect(snapshot!.snapshot).not.toHaveProperty('epoch');
    await ack(ws, snapshot!.snapshot!.version);
    ws.close();
    expect(sent(await connect(snapshot!.snapshot!.version, undefined)).map((m) => m.type)).toEqual(['snapshot']);
  });

  it('resumes only the node whose session it was: another node naming its epoch and version gets a snapshot', async () => {
    await addListener(80);
    const { ws, version, epoch } = await firstSession();
    ws.close();
    expect(sent(await connect(version, epoch, 'l4-b')).map((m) => m.type)).toEqual(['snapshot']);
  });
});

describe('control hub: a changed deny set', () => {
  let deny = [{ cidr: '10.9.0.0/16' }];
  beforeEach(() => {
    deny = [{ cidr: '10.9.0.0/16' }];
    hub.setBackendDeny(async () => deny);
  });

  it('reaches a node that takes it in a delta as a delta, and any other node as a whole snapshot', async () => {
    await addListener(80);
    const deltas = await connect(0, '', ID, { denyDeltas: true });
    const whole = await connect(0, '', 'l4-b');
    for (const ws of [deltas, whole]) {
      expect(sent(ws)[0]).toMatchObject({ type: 'snapshot', snapshot: { backendDeny: deny } });
      await ack(ws, versionOf(sent(ws).at(-1)!));
    }
    // A node registered (or an address pool added): its write recompiles.
    deny = [...deny, { cidr: '127.0.0.99/32' }];
    hub.changed();
    clock.flush();
    await settle(hub);
    expect(sent(deltas)).toHaveLength(2);
    expect(sent(deltas)[1]).toMatchObject({ type: 'delta', upsert: [], remove: [], backendDeny: deny });
    expect(sent(whole)).toHaveLength(2);
    expect(sent(whole)[1]).toMatchObject({ type: 'snapshot', snapshot: { backendDeny: deny } });
    // Sent once.
    hub.changed();
    clock.flush();
    await settle(hub);
    expect([sent(deltas).length, sent(whole).length]).toEqual([2, 2]);
  });

  it('does not stop a node that takes it in a delta from resuming: the resume delta carries the new set', async () => {
    await addListener(80);
    const ws = await connect(0, '', ID, { denyDeltas: true });
    const [first] = sent(ws);
    await ack(ws, versionOf(first!));
    ws.close();
    deny = [...deny, { cidr: '127.0.0.99/32' }];
    hub.changed();
    clock.flush();
    await settle(hub);
    const back = await connect(versionOf(first!), first!.snapshot!.epoch, ID, { denyDeltas: true });
    expect(sent(back)).toHaveLength(1);
    expect(sent(back)[0]).toMatchObject({
      type: 'delta',
      fromVersion: versionOf(first!),
      upsert: [],
      backendDeny: deny,
    });
  });

  it('makes a node that does not take it in a delta come back to a whole snapshot', async () => {
    await addListener(80);
    const { ws, version, epoch } = await firstSession();
    ws.close();
    deny = [...deny, { cidr: '127.0.0.99/32' }];
    expect(sent(await connect(version, epoch)).map((m) => m.type)).toEqual(['snapshot']);
  });
});

describe('control hub: a node whose config another controller process sent', () => {
  type Digested = Sent & { digest?: string; snapshot?: Sent['snapshot'] & { digest?: string } };
  const digestOf = (m: Sent) =>
    (m as Digested).type === 'snapshot' ? (m as Digested).snapshot!.digest : (m as Digested).digest;
  /** The controller restarts: a new process on the same database. */
  const restart = async () => {
    hub.close();
    hub = await startHub(t, { clock });
  };

  it('is sent an empty delta when it holds what it would be sent, and its whole config once a write came between', async () => {
    await addListener(80);
    const { ws, version, epoch } = await firstSession();
    const digest = digestOf(sent(ws)[0]!)!;
    expect(digest).toMatch(/^[0-9a-f]{32}$/);
    ws.close();
    await restart();
    const back = await connect(version, epoch, ID, { appliedDigest: digest });
    expect(sent(back)).toHaveLength(1);
    expect(sent(back)[0]).toMatchObject({ type: 'delta', fromVersion: version, upsert: [], remove: [] });
    expect(digestOf(sent(back)[0]!)).toBe(digest);
    await ack(back, versionOf(sent(back)[0]!));

    // It carries on with deltas, each naming the config it makes.
    const added = await addListener(81);
    expect(sent(back)[1]).toMatchObject({ type: 'delta', upsert: [{ id: added }] });
    const after = digestOf(sent(back)[1]!)!;
    expect(after).not.toBe(digest);
    await ack(back, versionOf(sent(back)[1]!));
    back.close();
    await restart();
    await addListener(82); // while it reconnects: what it holds is no longer what it would be sent
    const again = await connect(versionOf(sent(back)[1]!), epoch, ID, { appliedDigest: after });
    expect(sent(again).map((m) => m.type)).toEqual(['snapshot']);
  });

  it('names a config by the same digest whether deltas built it or one whole snapshot carries it', async () => {
    const a = await addListener(80);
    const b = await addListener(81);
    const { ws } = await firstSession();
    await addListener(82); // added
    t.db.delete(listeners).where(eq(listeners.id, a)).run(); // removed
    hub.changed(t.lbId);
    clock.flush();
    await settle(hub);
    t.db.update(listeners).set({ port: 91 }).where(eq(listeners.id, b)).run(); // changed
    hub.changed(t.lbId);
    clock.flush();
    await settle(hub);
    expect(sent(ws).map((m) => m.type)).toEqual(['snapshot', 'delta', 'delta', 'delta']);
    expect(sent(ws)[3]!.upsert!.map((l) => [l.id, l.port])).toEqual([[b, 91]]);
    const built = digestOf(sent(ws).at(-1)!);
    ws.close();
    await restart();
    // A node that claims nothing is sent its whole config, which the deltas above made.
    const whole = await connect(0, '');
    expect(sent(whole).map((m) => m.type)).toEqual(['snapshot']);
    expect(digestOf(sent(whole)[0]!)).toBe(built);
  });

  it('carries an L7 node on as well, with an empty delta', async () => {
    const l7 = async (held: object = {}) => {
      const ws = new FakeSocket();
      const who = { nodeId: 'l7-a', kind: 'l7' as const, address: '127.0.0.21' };
      registered(hub, who.nodeId, 'l7', who.address);
      hub.attach(ws as unknown as WebSocket, who);
      const hello = { type: 'hello', ...who, capacity: 100, appliedVersion: 0, appliedEpoch: '', ...held };
      ws.emit('message', Buffer.from(JSON.stringify(hello)), false);
      await settle(hub);
      return ws;
    };
    await connect(0, ''); // the L4 nodes the L7 nodes accept PROXY headers from are part of their config
    const first = await l7();
    expect(sent(first).map((m) => m.type)).toEqual(['snapshot']);
    const snapshot = sent(first)[0]!.snapshot!;
    await restart();
    const back = await l7({
      appliedVersion: snapshot.version,
      appliedEpoch: snapshot.epoch,
      appliedDigest: digestOf(sent(first)[0]!),
    });
    expect(sent(back)).toHaveLength(1);
    expect(sent(back)[0]).toMatchObject({ type: 'delta', fromVersion: snapshot.version, upsert: [], remove: [] });
  });
});
