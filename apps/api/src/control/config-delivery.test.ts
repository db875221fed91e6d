import { Value } from '@sinclair/typebox/value';
import { listeners, loadBalancers, rules, servers } from '@slb/db';
import { ControllerMessage, type NodeSnapshot } from '@slb/model';
import { createTestDb, type TestDb } from '@slb/test-support/test-db';
import { eq } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { silentLogger } from '../../test/hub-fakes.js';
import type { CompiledLb } from './compile-lb.js';
import { compileLbs } from './compiler.js';
import { ConfigDelivery, type Fleet } from './config-delivery.js';
import { listLbs } from './lb-rows.js';
import { newSession, type Session } from './node-session.js';
import type { VipMode } from './vip-serving.js';

// Issue #22: a message's listeners are spliced in from each compiled listener's JSON, no longer built as objects
// and serialised again. The nodes must get the same bytes as before: each message here is held against the old
// path, JSON.stringify of the message with every listener built as `{ ...config, <this node's fields> }`.

type Json = Record<string, unknown>;
type Listener = { id: string };

/** A socket that keeps the text of each message, as the node receives it. */
class TextSocket {
  readonly OPEN = 1;
  readyState = 1;
  readonly texts: string[] = [];
  send(text: string): void {
    this.texts.push(text);
  }
}

const L4_ADDRESS = '127.0.0.31';
const L7_ADDRESS = '127.0.0.41';
const byId = (a: Listener, b: Listener) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The listeners as the old path built them for an L4 node (`l4Wanted`'s build), in the order sent. */
function oldL4(lb: CompiledLb, mode: VipMode, ids?: string[]): Listener[] {
  return lb.l4
    .filter(({ config }) => ids === undefined || ids.includes(config.id))
    .map(({ config }) => ({
      ...config,
      bindAddresses: [lb.address ?? L4_ADDRESS],
      ...(mode === 'active-active' ? { reusePort: true } : {}),
    }))
    .sort(byId);
}

/** The listeners as the old path built them for an L7 node (`l7Wanted`'s build), in the order sent. */
function oldL7(lb: CompiledLb, ids?: string[]): Listener[] {
  return lb.l7
    .filter(({ config }) => ids === undefined || ids.includes(config.id))
    .map(({ config }) => ({ ...config, bindAddress: L7_ADDRESS }))
    .sort(byId);
}

/**
 * The last message sent, held against the old path: its envelope (everything but the listeners, built by the
 * same code as before) with the listeners the old path built, serialised whole. Same bytes, same object, and
 * one the nodes' schema takes.
 */
function expectOldBytes(ws: TextSocket, key: 'listeners' | 'upsert', old: Listener[]): Json {
  const text = ws.texts.at(-1)!;
  const sent = JSON.parse(text) as Json;
  const expected = structuredClone(sent);
  const body = (key === 'listeners' ? expected.snapshot : expected) as Json;
  expect((body[key] as Listener[]).length).toBe(old.length);
  body[key] = old;
  expect(sent).toEqual(expected);
  expect(text).toBe(JSON.stringify(expected));
  expect(Value.Check(ControllerMessage, sent)).toBe(true);
  return sent;
}

describe('config delivery: the message text assembled from each listener JSON', () => {
  let t: TestDb;
  afterEach(() => t?.close());

  /** One LB on a VIP with TCP (PROXY v2), UDP, HTTP with a rule (two groups) and a second HTTP listener. */
  function seed() {
    t = createTestDb();
    t.db.update(loadBalancers).set({ address: '10.20.0.5' }).where(eq(loadBalancers.id, t.lbId)).run();
    const web = t.group();
    const api = t.group();
    for (let i = 1; i <= 3; i++) t.server(web, `10.0.0.${i}`, 8080);
    t.server(api, '10.0.1.1', 9090);
    const tcp = t.listener({ serverGroupId: web, port: 443, protocol: 'tcp' });
    t.db.update(listeners).set({ proxyProtocol: 'v2' }).where(eq(listeners.id, tcp)).run();
    const udp = t.listener({ serverGroupId: web, port: 53, protocol: 'udp', backendPort: 5353 });
    const http = t.listener({ serverGroupId: web, port: 80, protocol: 'http' });
    const http2 = t.listener({ serverGroupId: api, port: 8080, protocol: 'http' });
    for (const [id, l7Port] of [
      [http, 30080],
      [http2, 30081],
    ] as const)
      t.db.update(listeners).set({ l7Port }).where(eq(listeners.id, id)).run();
    const rule = t.rule(http, api);
    t.db
      .update(rules)
      .set({ path: "/v1/a%20b/~x!$&'()*+,;=:@", domain: 'api.example.com' })
      .where(eq(rules.id, rule))
      .run();
    return { web, tcp, udp, http, http2 };
  }

  async function fleetOf(mode: VipMode): Promise<Fleet & { lb: () => CompiledLb }> {
    const compiled = await compileLbs(t.store, [t.lbId]);
    return {
      lbs: await listLbs(t.store),
      compiled,
      placement: new Map([[t.lbId, ['l4-a']]]),
      serving: new Map([[t.lbId, { mode, binders: ['l4-a'] }]]),
      l4Addresses: [L4_ADDRESS, '127.0.0.32'],
      lb: () => compiled.get(t.lbId)!,
    };
  }

  function delivery(
    maxMessageBytes = 1024 * 1024,
    tooLarge: (reason: string) => void = () => expect.unreachable('config too large'),
  ): ConfigDelivery {
    const d = new ConfigDelivery({
      log: silentLogger,
      startVersion: 100,
      maxMessageBytes,
      tooLarge: (_s, _v, reason) => tooLarge(reason),
      now: () => Date.parse('2026-01-02T03:04:05.678Z'),
    });
    d.backendDeny = () => [{ cidr: '169.254.169.254/32' }, { cidr: '10.20.0.0/16', port: 22 }];
    d.sessionSyncPrefix = 'slb:test';
    return d;
  }

  function session(kind: 'l4' | 'l7', backendSets?: boolean): { session: Session; ws: TextSocket } {
    const ws = new TextSocket();
    const address = kind === 'l4' ? L4_ADDRESS : L7_ADDRESS;
    const who = { nodeId: `${kind}-a`, kind, address };
    const hello = { type: 'hello' as const, ...who, capacity: 100, appliedVersion: 0, reusePort: true, backendSets };
    return { session: newSession(ws as unknown as WebSocket, who, hello, Date.now()), ws };
  }

  const pool = (healthy: boolean): NodeSnapshot['l7Nodes'] => [
    { nodeId: 'l7-a', address: L7_ADDRESS, port: 8443, healthy },
    { nodeId: 'l7-b', address: '127.0.0.42', port: 8443, healthy: true },
  ];

  it('L4: the first snapshot, then deltas with upserts, removes, reusePort and a new l7Pool, are the old bytes', async () => {
    const { web, tcp, udp } = seed();
    const d = delivery();
    const { session: s, ws } = session('l4');

    const before = await fleetOf('active-standby');
    d.pushL4(s, before, pool(true));
    const first = expectOldBytes(ws, 'listeners', oldL4(before.lb(), 'active-standby'));
    expect(first).toMatchObject({ type: 'snapshot', kind: 'l4', snapshot: { l7Nodes: pool(true) } });
    expect((first.snapshot as Json).sessionSyncPrefix).toBe('slb:test');

    // A server added (every listener of its group changes), a listener stopped, an L7 node unhealthy.
    t.server(web, '10.0.0.9', 8080);
    t.db.update(listeners).set({ status: 'stopped' }).where(eq(listeners.id, udp)).run();
    let fleet = await fleetOf('active-standby');
    d.pushL4(s, fleet, pool(false));
    const was = new Map(before.lb().l4.map((l) => [l.config.id, l.json]));
    const changed = fleet
      .lb()
      .l4.filter((l) => was.get(l.config.id) !== l.json)
      .map((l) => l.config.id);
    expect(changed).toEqual([tcp]); // the L4 side of an HTTP listener has no backends
    const delta = expectOldBytes(ws, 'upsert', oldL4(fleet.lb(), 'active-standby', changed));
    expect(delta).toMatchObject({ type: 'delta', kind: 'l4', remove: [udp], l7Nodes: pool(false) });

    // The VIP shared: every listener sent again with reusePort, through the path of a write to one LB.
    fleet = await fleetOf('active-active');
    d.pushChanged(s, fleet, [t.lbId]);
    const shared = expectOldBytes(ws, 'upsert', oldL4(fleet.lb(), 'active-active'));
    expect(shared).toMatchObject({ remove: [] });
    expect(shared.l7Nodes).toBeUndefined();
  });

  it('L7: the first snapshot, then a delta with an upsert and a remove, are the old bytes', async () => {
    const { http, http2 } = seed();
    const d = delivery();
    const { session: s, ws } = session('l7');

    let fleet = await fleetOf('active-standby');
    d.pushL7(s, fleet);
    const first = expectOldBytes(ws, 'listeners', oldL7(fleet.lb()));
    expect(first).toMatchObject({ type: 'snapshot', kind: 'l7', snapshot: { l4Nodes: fleet.l4Addresses } });

    t.db.update(servers).set({ weight: 7 }).where(eq(servers.address, '10.0.0.2')).run();
    t.db.update(listeners).set({ status: 'stopped' }).where(eq(listeners.id, http2)).run();
    fleet = await fleetOf('active-standby');
    d.pushChanged(s, fleet, [t.lbId]);
    const delta = expectOldBytes(ws, 'upsert', oldL7(fleet.lb(), [http]));
    expect(delta).toMatchObject({ type: 'delta', kind: 'l7', remove: [http2] });
  });

  it('the size limit counts the bytes of the assembled text', async () => {
    seed();
    const { session: s, ws } = session('l7');
    delivery().pushL7(s, await fleetOf('active-standby'));
    const bytes = Buffer.byteLength(ws.texts[0]!);

    const refused: string[] = [];
    for (const max of [bytes, bytes - 1]) {
      const next = session('l7');
      const fleet = await fleetOf('active-standby');
      delivery(max, (reason) => refused.push(reason)).pushL7(next.session, fleet);
      expect(next.ws.texts.map((text) => JSON.parse(text).type)).toEqual([max === bytes ? 'snapshot' : 'error']);
    }
    expect(refused).toEqual([`config of ${bytes} bytes exceeds the control channel limit of ${bytes - 1} bytes`]);
  });

  it('L4, to a node that reads backend sets: each group’s backends once, and the same listeners once resolved', async () => {
    const { web, tcp } = seed();
    const tcp2 = t.listener({ serverGroupId: web, port: 444, protocol: 'tcp' });
    const d = delivery();
    const { session: s, ws } = session('l4', true);
    const plain = session('l4');

    /** The last message with every set put back into the listeners that name it, as the node does. */
    const resolved = (key: 'listeners' | 'upsert') => {
      const sent = JSON.parse(ws.texts.at(-1)!) as Json;
      expect(Value.Check(ControllerMessage, sent)).toBe(true);
      const body = (key === 'listeners' ? sent.snapshot : sent) as Json;
      const sets = new Map((body.backendSets as { id: string; backends: unknown[] }[]).map((x) => [x.id, x.backends]));
      delete body.backendSets;
      body[key] = (body[key] as Json[]).map(({ backendSet, ...fields }) =>
        backendSet === undefined ? fields : { ...fields, backends: sets.get(backendSet as string) },
      );
      return { sent, sets: [...sets.values()] };
    };

    const fleet = await fleetOf('active-standby');
    d.pushL4(s, fleet, pool(true));
    delivery().pushL4(plain.session, fleet, pool(true));
    const first = resolved('listeners');
    // Two TCP listeners on one group share a set; UDP's backend port makes its own; HTTP has none to share.
    expect(first.sets).toHaveLength(2);
    expect(first.sent).toEqual(JSON.parse(plain.ws.texts.at(-1)!));
    expect(ws.texts.at(-1)!.length).toBeLessThan(plain.ws.texts.at(-1)!.length);
    const named = (JSON.parse(ws.texts.at(-1)!).snapshot.listeners as Json[]).filter((l) => 'backendSet' in l);
    expect(named.map((l) => l.id).sort()).toEqual([tcp, tcp2, named.find((l) => l.port === 53)!.id].sort());

    // A delta after a write names the sets it carries, and only those.
    t.server(web, '10.0.0.9', 8080);
    const next = await fleetOf('active-standby');
    d.pushChanged(s, next, [t.lbId]);
    const delta = resolved('upsert');
    expect(delta.sets).toHaveLength(2);
    const upserted = (delta.sent.upsert as Listener[]).map((l) => l.id);
    expect(upserted.length).toBeGreaterThan(0);
    expect(delta.sent.upsert).toEqual(oldL4(next.lb(), 'active-standby', upserted));
  });
});
