import { loadBalancers, nodes } from '@slb/db';
import { APPLYING_SILENCE_MAX_MS } from '@slb/model';
import { createTestDb, type TestDb } from '@slb/test-support/test-db';
import { eq } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type WebSocket from 'ws';
import { FakeSocket, registered, settle, startHub } from '../../test/hub-fakes.js';
import { NodeService, OFFLINE_AFTER_MS, toNode } from '../services/nodes.js';
import { ManualClock } from './clock.js';
import type { ControlHub } from './hub.js';
import { LIVENESS_TICK_MS } from './node-liveness.js';

// The controller's side of the control channel, driven with in-memory sockets and a clock moved by hand:
// what a node is sent, and when.

async function connect(hub: ControlHub, nodeId: string, kind: 'l4' | 'l7', address: string): Promise<FakeSocket> {
  const ws = new FakeSocket();
  registered(hub, nodeId, kind, address);
  hub.attach(ws as unknown as WebSocket, { nodeId, kind, address });
  const hello = { type: 'hello', nodeId, kind, address, capacity: 100, appliedVersion: 0 };
  ws.emit('message', Buffer.from(JSON.stringify(hello)), false);
  await settle(hub);
  return ws;
}

/** What a node says every second (HEARTBEAT_INTERVAL_MS) to stay online. */
function heartbeat(ws: FakeSocket): void {
  const load = { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 };
  ws.emit('message', Buffer.from(JSON.stringify({ type: 'heartbeat', load })), false);
}

/** The L7 pool as the L4 node last got it (a snapshot, or a delta that changed it). */
function l7PoolOf(ws: FakeSocket): string[] | undefined {
  for (const m of [...ws.sent].reverse()) {
    const pool = m.type === 'snapshot' ? m.snapshot?.l7Nodes : m.l7Nodes;
    if (pool) return pool.map((n) => n.nodeId);
  }
  return undefined;
}

describe('control hub: the L7 pool across a controller restart', () => {
  let t: TestDb;
  const hubs: ControlHub[] = [];
  afterEach(() => {
    for (const h of hubs.splice(0)) h.close();
    t?.close();
  });

  /** A first controller that saw two L7 nodes and an L4 node, then died (its sessions just stop). */
  async function previousController(): Promise<void> {
    t = createTestDb();
    const first = await startHub(t);
    await connect(first, 'l7-a', 'l7', '127.0.0.21');
    await connect(first, 'l7-b', 'l7', '127.0.0.22');
    const l4 = await connect(first, 'l4-a', 'l4', '127.0.0.11');
    expect(l7PoolOf(l4)).toEqual(['l7-a', 'l7-b']);
    first.close();
  }

  it('keeps the L7 nodes it last knew for an L4 node that reconnects first, until they rejoin', async () => {
    await previousController();
    const hub = await startHub(t, { rejoinGraceMs: 60_000 });
    hubs.push(hub);
    const l4 = await connect(hub, 'l4-a', 'l4', '127.0.0.11');
    expect(l7PoolOf(l4)).toEqual(['l7-a', 'l7-b']); // not [] while the L7 nodes are still reconnecting
    await connect(hub, 'l7-b', 'l7', '127.0.0.22');
    await connect(hub, 'l7-a', 'l7', '127.0.0.21');
    expect(l7PoolOf(l4)).toEqual(['l7-a', 'l7-b']);
  });

  it('drops an L7 node that does not come back once the grace is over', async () => {
    await previousController();
    const clock = new ManualClock();
    const hub = await startHub(t, { rejoinGraceMs: 5_000, clock });
    hubs.push(hub);
    const l4 = await connect(hub, 'l4-a', 'l4', '127.0.0.11');
    const l7 = await connect(hub, 'l7-a', 'l7', '127.0.0.21');
    for (let i = 0; i < 4; i++) {
      clock.advance(1_000);
      await settle(hub);
      heartbeat(l4);
      heartbeat(l7);
    }
    clock.advance(999);
    await settle(hub);
    expect(l7PoolOf(l4)).toEqual(['l7-a', 'l7-b']);
    clock.advance(1);
    await settle(hub);
    expect(l7PoolOf(l4)).toEqual(['l7-a']);
  });
});

describe('control hub: the fleet coming over from another API replica', () => {
  let t: TestDb;
  const hubs: ControlHub[] = [];
  afterEach(() => {
    for (const h of hubs.splice(0)) h.close();
    t?.close();
  });

  /** Replica B runs, holding no node; replica A holds two L7 nodes and an L4 node, then dies. */
  async function replicaDies(): Promise<ControlHub> {
    t = createTestDb();
    const b = await startHub(t, { sharedFleet: true, rejoinGraceMs: 60_000 });
    hubs.push(b);
    const a = await startHub(t);
    await connect(a, 'l7-a', 'l7', '127.0.0.21');
    await connect(a, 'l7-b', 'l7', '127.0.0.22');
    await connect(a, 'l4-a', 'l4', '127.0.0.11');
    a.close();
    return b;
  }

  it('keeps the L7 nodes heartbeating on the dead replica in the pool for an L4 node that comes first', async () => {
    const b = await replicaDies();
    const l4 = await connect(b, 'l4-a', 'l4', '127.0.0.11');
    expect(l7PoolOf(l4)).toEqual(['l7-a', 'l7-b']); // not [] while the L7 nodes are still on their way
    await connect(b, 'l7-a', 'l7', '127.0.0.21');
    expect(l7PoolOf(l4)).toEqual(['l7-a', 'l7-b']);
  });

  it('does not count a node whose heartbeat stopped earlier than the offline threshold', async () => {
    const b = await replicaDies();
    const stale = new Date(Date.now() - OFFLINE_AFTER_MS - 1_000).toISOString();
    t.db.update(nodes).set({ lastHeartbeatAt: stale }).where(eq(nodes.id, 'l7-b')).run();
    const l4 = await connect(b, 'l4-a', 'l4', '127.0.0.11');
    expect(l7PoolOf(l4)).toEqual(['l7-a']);
  });
});

describe('control hub: node liveness', () => {
  let t: TestDb;
  let hub: ControlHub;
  let clock: ManualClock;
  afterEach(() => {
    hub?.close();
    t?.close();
  });

  async function start(): Promise<void> {
    t = createTestDb();
    clock = new ManualClock();
    hub = await startHub(t, { clock });
  }

  it('takes a node out once it has been silent past the offline threshold, not before', async () => {
    await start();
    const hosts = () => hub.runtime(t.lbId, 1).nodes.map((n) => `${n.nodeId} ${n.online ? 'online' : 'offline'}`);
    const a = await connect(hub, 'l4-a', 'l4', '127.0.0.11');
    await connect(hub, 'l4-b', 'l4', '127.0.0.12');
    clock.flush();
    await settle(hub);
    expect(hosts()).toEqual(['l4-a online', 'l4-b online']);
    // l4-b goes silent; l4-a keeps heartbeating every second.
    for (let at = 0; at < OFFLINE_AFTER_MS; at += 1_000) {
      clock.advance(1_000);
      await settle(hub);
      heartbeat(a);
    }
    expect(hosts()).toEqual(['l4-a online', 'l4-b online']); // silent exactly the threshold: still online
    clock.advance(LIVENESS_TICK_MS);
    await settle(hub);
    expect(hosts()).toEqual(['l4-a online']); // offline, and its LB placed without it
  });

  it('takes a silent L7 node out of the pool the L4 nodes are sent within a tick, and back in once it heartbeats', async () => {
    await start();
    const l4 = await connect(hub, 'l4-a', 'l4', '127.0.0.11');
    const a = await connect(hub, 'l7-a', 'l7', '127.0.0.21');
    const b = await connect(hub, 'l7-b', 'l7', '127.0.0.22');
    clock.flush();
    await settle(hub);
    expect(l7PoolOf(l4)).toEqual(['l7-a', 'l7-b']);
    // l7-b goes silent, its socket still open; the L4 node and l7-a keep heartbeating, so the online L4
    // nodes do not change: only the L7 pool does.
    for (let at = 0; at < OFFLINE_AFTER_MS; at += 1_000) {
      clock.advance(1_000);
      await settle(hub);
      heartbeat(l4);
      heartbeat(a);
    }
    expect(l7PoolOf(l4)).toEqual(['l7-a', 'l7-b']); // silent exactly the threshold: still online
    clock.advance(LIVENESS_TICK_MS);
    await settle(hub);
    expect(l7PoolOf(l4)).toEqual(['l7-a']);
    heartbeat(b);
    clock.advance(LIVENESS_TICK_MS);
    await settle(hub);
    expect(l7PoolOf(l4)).toEqual(['l7-a', 'l7-b']);
  });

  it('neither recompiles nor pushes, tick after tick, while no node changes, with nodes or without', async () => {
    await start();
    const recompiles = vi.spyOn(hub as unknown as { recompile: () => void }, 'recompile');
    clock.advance(10 * LIVENESS_TICK_MS);
    await settle(hub); // no node yet
    expect(recompiles).not.toHaveBeenCalled();
    const l4 = await connect(hub, 'l4-a', 'l4', '127.0.0.11');
    const l7 = await connect(hub, 'l7-a', 'l7', '127.0.0.21');
    clock.flush();
    await settle(hub);
    recompiles.mockClear();
    const sent = [l4.sent.length, l7.sent.length];
    for (let at = 0; at < 3 * OFFLINE_AFTER_MS; at += 1_000) {
      clock.advance(1_000);
      await settle(hub);
      heartbeat(l4);
      heartbeat(l7);
    }
    expect(recompiles).not.toHaveBeenCalled();
    expect([l4.sent.length, l7.sent.length]).toEqual(sent);
    hub.disconnect('l4-a', 'deleted');
    hub.disconnect('l7-a', 'deleted');
    clock.flush();
    await settle(hub);
    recompiles.mockClear();
    clock.advance(10 * LIVENESS_TICK_MS);
    await settle(hub); // every node gone
    expect(recompiles).not.toHaveBeenCalled();
  });

  it('does not take a stall of its event loop for the nodes going silent', async () => {
    await start();
    await connect(hub, 'l7-a', 'l7', '127.0.0.21');
    const l4 = await connect(hub, 'l4-a', 'l4', '127.0.0.11');
    expect(l7PoolOf(l4)).toEqual(['l7-a']);
    // Busy for longer than the offline threshold (as when serialising a fleet-sized config): the nodes'
    // heartbeats would be waiting unread, so they must not count as missed.
    clock.jump(OFFLINE_AFTER_MS + 500);
    clock.advance(2 * LIVENESS_TICK_MS);
    await settle(hub); // the liveness ticker runs after the stall
    expect(l7PoolOf(l4)).toEqual(['l7-a']);
    // Silence after the stall does count.
    clock.advance(OFFLINE_AFTER_MS);
    await settle(hub);
    expect(l7PoolOf(l4)).toEqual([]);
  });
});

describe('control hub: the node status GET /v1/nodes shows', () => {
  it('is the status placement uses: a node silent while it applies a config stays online until its bound', async () => {
    const t = createTestDb();
    const clock = new ManualClock();
    const hub = await startHub(t, { clock });
    try {
      const service = new NodeService(t.store, (id) => hub.nodeOnline(id));
      const ws = await connect(hub, 'l4-a', 'l4', '127.0.0.11');
      const load = { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 };
      ws.emit('message', Buffer.from(JSON.stringify({ type: 'heartbeat', load, applying: 7 })), false);
      await settle(hub);
      const row = await service.find('l4-a');
      const heardAt = Date.parse(row.lastHeartbeatAt ?? '');
      // Silent past the plain threshold: its stored heartbeat alone would say offline, but the hub still
      // places LBs on it, and the API must not tell the admin otherwise.
      clock.advance(OFFLINE_AFTER_MS + 1_000);
      await settle(hub);
      const later = heardAt + OFFLINE_AFTER_MS + 1_000;
      expect(hub.runtime(t.lbId, 1).nodes.map((n) => n.online)).toEqual([true]);
      expect(service.view(row, later).status).toBe('online');
      expect(toNode(row, later).status).toBe('offline');
      // Past the applying bound it is offline in both.
      clock.advance(APPLYING_SILENCE_MAX_MS);
      await settle(hub);
      expect(hub.runtime(t.lbId, 1).nodes).toEqual([]);
      expect(service.view(row, later + APPLYING_SILENCE_MAX_MS).status).toBe('offline');
    } finally {
      hub.close();
      t.close();
    }
  });

  it('falls back to the stored heartbeat for a node connected to another replica', async () => {
    const t = createTestDb();
    const hub = await startHub(t);
    try {
      const service = new NodeService(t.store, (id) => hub.nodeOnline(id));
      registered(hub, 'l4-b', 'l4', '127.0.0.12');
      const heardAt = Date.now();
      t.db
        .update(nodes)
        .set({ lastHeartbeatAt: new Date(heardAt).toISOString() })
        .where(eq(nodes.id, 'l4-b'))
        .run();
      const row = await service.find('l4-b');
      expect(hub.nodeOnline('l4-b')).toBeUndefined();
      expect(service.view(row, heardAt + OFFLINE_AFTER_MS).status).toBe('online');
      expect(service.view(row, heardAt + OFFLINE_AFTER_MS + 1).status).toBe('offline');
    } finally {
      hub.close();
      t.close();
    }
  });
});

describe('control hub: recompiles', async () => {
  it('coalesces a burst of changes into one delta, sent once the burst is done', async () => {
    const t = createTestDb();
    const clock = new ManualClock();
    const hub = await startHub(t, { clock });
    try {
      const l4 = await connect(hub, 'l4-a', 'l4', '127.0.0.11');
      expect(l4.sent.map((m) => m.type)).toEqual(['snapshot']);
      const group = t.group();
      for (let port = 80; port < 83; port++) {
        t.listener({ serverGroupId: group, port });
        t.db.update(loadBalancers).set({ configVersion: port }).where(eq(loadBalancers.id, t.lbId)).run();
        hub.changed(t.lbId);
      }
      expect(l4.sent).toHaveLength(1);
      clock.flush();
      await settle(hub);
      expect(l4.sent.map((m) => m.type)).toEqual(['snapshot', 'delta']);
      expect((l4.sent[1] as unknown as { upsert: unknown[] }).upsert).toHaveLength(3);
    } finally {
      hub.close();
      t.close();
    }
  });
});

describe('control hub: shutdown', () => {
  it('touches nothing after close(): sockets closing and last heartbeats arriving late do not reach the database', async () => {
    const t = createTestDb();
    const errors: unknown[] = [];
    const log = pino({ level: 'error' }, { write: (line: string) => void errors.push(line) });
    const clock = new ManualClock();
    const hub = await startHub(t, { clock }, log as unknown as FastifyBaseLogger);
    const ws = await connect(hub, 'l4-a', 'l4', '127.0.0.11');
    clock.flush();
    await settle(hub);
    // Close the way the app does: the hub, then the database; the socket's close and a heartbeat come after.
    const closeEvents = ws.listeners('close');
    ws.removeAllListeners('close');
    hub.close();
    t.close();
    for (const l of closeEvents) (l as () => void)();
    const load = { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 };
    ws.emit('message', Buffer.from(JSON.stringify({ type: 'heartbeat', load })), false);
    clock.advance(OFFLINE_AFTER_MS * 2);
    await settle(hub);
    expect(errors).toEqual([]);
  });
});

describe('control hub: the L7 nodes learn which peers may send PROXY headers', () => {
  let t: TestDb;
  const hubs: ControlHub[] = [];
  afterEach(() => {
    for (const h of hubs.splice(0)) h.close();
    t?.close();
  });

  /** The L4 addresses in the L7 node's latest snapshot. */
  function l4NodesOf(ws: FakeSocket): string[] | undefined {
    for (const m of [...ws.sent].reverse()) {
      if (m.type === 'snapshot') return (m.snapshot as { l4Nodes?: string[] }).l4Nodes;
    }
    return undefined;
  }

  it('sends every L4 node address, again whenever the L4 fleet changes, and keeps an L4 node that left', async () => {
    t = createTestDb();
    const hub = await startHub(t);
    hubs.push(hub);
    const l7 = await connect(hub, 'l7-a', 'l7', '127.0.0.21');
    expect(l4NodesOf(l7)).toEqual([]);
    const l4a = await connect(hub, 'l4-a', 'l4', '127.0.0.11');
    expect(l4NodesOf(l7)).toEqual(['127.0.0.11']);
    await connect(hub, 'l4-b', 'l4', '127.0.0.12');
    expect(l4NodesOf(l7)).toEqual(['127.0.0.11', '127.0.0.12']);
    // A dropped channel is not a dead node: it may still forward, so its address stays trusted.
    l4a.close();
    expect(l4NodesOf(l7)).toEqual(['127.0.0.11', '127.0.0.12']);
    // An L7 node that reconnects gets the list in its first snapshot (its first channel closed: a second
    // one with the same credential is refused while the first lives).
    l7.close();
    const again = await connect(hub, 'l7-a', 'l7', '127.0.0.21');
    expect(l4NodesOf(again)).toEqual(['127.0.0.11', '127.0.0.12']);
  });
});
