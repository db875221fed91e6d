import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { HeartbeatMessage, type NodeSnapshot, NodeSnapshot as NodeSnapshotSchema, REPORT_MAX_BYTES } from '@slb/model';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { reconnectDelay } from './backoff.js';
import { ControlChannelClient, saveSpacingMs } from './control-channel.js';
import { applyListenerDelta } from './delta.js';
import { peekSaved, saveSnapshot, serializeSnapshot } from './state-file.js';
import { HUGE_COUNTER, hugeTrafficEntry } from './traffic.fixtures.js';
import { TrafficReporter } from './traffic-tally.js';

const quiet = { info: () => {}, warn: () => {}, error: () => {} };
const listener = (id: string, port: number): NodeSnapshot['listeners'][number] => ({
  id,
  loadBalancerId: 'lb-00000000000000000001',
  tenantId: 'tnt-00000000000000000001',
  protocol: 'tcp',
  port,
  bindAddresses: ['127.0.0.1'],
  scheduler: 'wrr',
  persistenceTimeout: 0,
  proxyProtocol: 'off',
  connectionDrainTimeout: 0,
  idleTimeout: 60,
  sessionSync: false,
  backends: [],
});
const snapshot = (version: number, listeners: NodeSnapshot['listeners']): NodeSnapshot => ({
  version,
  generatedAt: new Date().toISOString(),
  listeners,
  l7Nodes: [],
});

let dir: string;
let wss: WebSocketServer;
let port: number;
let received: unknown[];
let server: WebSocket | null;
let client: ControlChannelClient<NodeSnapshot> | null;
let applied: NodeSnapshot[];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'slb-runtime-'));
  received = [];
  applied = [];
  server = null;
  wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((r) => wss.once('listening', r));
  port = (wss.address() as { port: number }).port;
  wss.on('connection', (ws) => {
    server = ws;
    ws.on('message', (d) => received.push(JSON.parse(d.toString())));
  });
});
afterEach(async () => {
  await client?.close();
  client = null;
  for (const c of wss.clients) c.terminate();
  wss.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Applied and its ack received. The ack leaves once the version is applied and may still be on its way
 * then: an apply that gave the event loop a turn ends in another phase than the socket read.
 */
const acked = (version: number) => () =>
  client?.current?.version === version &&
  received.some(
    (m) => (m as { type: string; version?: number }).type === 'ack' && (m as { version?: number }).version === version,
  );

/** Many short waits in a row (hello, apply, ack); a fine poll keeps the file fast. */
const POLL = { timeout: 5000, interval: 10 };
/** A controller process's epoch (SnapshotEpoch). */
const EPOCH = '0123456789abcdef0123456789abcdef';
/** A controller's digest of a config (SnapshotDigest). */
const DIGEST = 'fedcba9876543210fedcba9876543210';

function makeClient(
  apply?: (s: NodeSnapshot) => Promise<void>,
  extra: Partial<ConstructorParameters<typeof ControlChannelClient<NodeSnapshot>>[0]> = {},
) {
  client = new ControlChannelClient<NodeSnapshot>({
    apiUrls: [`http://127.0.0.1:${port}`],
    token: 'node-token-0123456789',
    nodeId: 'node-1',
    kind: 'l4',
    address: '127.0.0.1',
    capacity: 100,
    stateDir: dir,
    schema: NodeSnapshotSchema,
    apply: apply ?? (async (s) => void applied.push(s)),
    load: () => ({ activeConnections: 3, newConnectionsPerSecond: 1, requestsPerSecond: 0 }),
    logger: quiet,
    maxReconnectDelayMs: 200,
    ...extra,
  });
  return client;
}

/** The controller sends a full L4 snapshot. */
function sendSnapshot(snap: unknown): void {
  server!.send(JSON.stringify({ type: 'snapshot', kind: 'l4', snapshot: snap }));
}

/** The controller sends an L4 delta. */
function sendDelta(fromVersion: number, version: number, upsert: unknown[], remove: string[]): void {
  server!.send(
    JSON.stringify({
      type: 'delta',
      kind: 'l4',
      fromVersion,
      version,
      generatedAt: new Date().toISOString(),
      upsert,
      remove,
    }),
  );
}

/** A client that applied and saved version 9, then closed: the state a restarted node finds on disk. */
async function saveVersion9(): Promise<void> {
  await makeClient().start();
  await vi.waitUntil(() => received.length > 0, POLL);
  sendSnapshot(snapshot(9, [listener('lsn-00000000000000000003', 1003)]));
  await vi.waitUntil(acked(9), POLL);
  await client!.flushed();
  await client!.close();
  received = [];
  applied = [];
}

describe('control channel client', () => {
  it('says hello, applies a snapshot and a delta, acks each, saves to disk and sends heartbeats', async () => {
    await makeClient().start();
    await vi.waitUntil(() => received.length > 0, POLL);
    expect(received[0]).toMatchObject({
      type: 'hello',
      nodeId: 'node-1',
      kind: 'l4',
      appliedVersion: 0,
      rotatesFailures: true,
    });
    sendSnapshot(snapshot(5, [listener('lsn-00000000000000000001', 1000)]));
    await vi.waitUntil(() => received.some((m) => (m as { type: string; version?: number }).version === 5), POLL);
    sendDelta(5, 6, [listener('lsn-00000000000000000002', 1001)], ['lsn-00000000000000000001']);
    await vi.waitUntil(() => received.some((m) => (m as { type: string; version?: number }).version === 6), POLL);
    expect(applied.at(-1)!.listeners.map((l) => l.id)).toEqual(['lsn-00000000000000000002']);
    await client!.flushed();
    const saved = JSON.parse(readFileSync(join(dir, 'last-known-good.json'), 'utf8'));
    expect(saved.version).toBe(6);
    await vi.waitUntil(() => received.some((m) => (m as { type: string }).type === 'heartbeat'), {
      ...POLL,
      timeout: 3000,
    });
  });

  it("says whether it can share a VIP:port, and sends the node's current listener failures in every heartbeat", async () => {
    const lsn = 'lsn-00000000000000000001';
    let current: { listenerId: string; reason: string }[] = [];
    let identifiedAs: string | undefined;
    await makeClient(undefined, {
      reusePort: true,
      boundVips: () => ['127.1.0.5'],
      currentFailures: () => current,
      identified: (address) => {
        identifiedAs = address;
      },
    }).start();
    expect(identifiedAs).toBe('127.0.0.1');
    await vi.waitUntil(() => received.length > 0, POLL);
    expect(received[0]).toMatchObject({ type: 'hello', reusePort: true, boundVips: ['127.1.0.5'] });
    type Beat = { type: string; failedListeners?: { listenerId: string; reason: string }[] };
    const beats = () => received.filter((m) => (m as Beat).type === 'heartbeat') as Beat[];
    await vi.waitUntil(() => beats().length > 0, { ...POLL, timeout: 3000 });
    expect(beats()[0]!.failedListeners).toEqual([]);
    // A bind fails between two configs (the hub sends nothing): the next heartbeat says so...
    current = [{ listenerId: lsn, reason: 'cannot bind tcp 127.1.0.5:7001: EADDRINUSE' }];
    const seen = beats().length;
    await vi.waitUntil(() => beats().length > seen, { ...POLL, timeout: 3000 });
    expect(beats().at(-1)!.failedListeners).toEqual(current);
    // ...and the next one that it healed.
    current = [];
    const healedFrom = beats().length;
    await vi.waitUntil(() => beats().length > healedFrom, { ...POLL, timeout: 3000 });
    expect(beats().at(-1)!.failedListeners).toEqual([]);
  });

  it('keeps a heartbeat within REPORT_MAX_BYTES, with thousands of failures and big traffic counters', async () => {
    // A node whose every listener lost its VIP:port to another process sent heartbeats past 64 KiB, and the
    // controller closed its channel every second.
    const current = Array.from({ length: 2000 }, (_, n) => ({
      listenerId: `lsn-${String(n).padStart(20, '0')}`,
      reason: `cannot bind tcp 127.1.0.2:${10000 + n}: EADDRINUSE`,
    }));
    const reporter = new TrafficReporter(() => current.slice(0, 150).map((f) => hugeTrafficEntry(f.listenerId)));
    const texts: string[] = [];
    wss.on('connection', (ws) => ws.on('message', (data) => texts.push(data.toString())));
    await makeClient(undefined, {
      currentFailures: () => current,
      traffic: () => reporter.report(),
      load: () => ({
        activeConnections: HUGE_COUNTER,
        newConnectionsPerSecond: HUGE_COUNTER,
        requestsPerSecond: HUGE_COUNTER,
      }),
    }).start();
    const beat = () => texts.find((t) => t.startsWith('{"type":"heartbeat"'));
    await vi.waitUntil(beat, { ...POLL, timeout: 3000 });
    const text = beat()!;
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(REPORT_MAX_BYTES);
    const message = JSON.parse(text);
    expect(Value.Check(HeartbeatMessage, message)).toBe(true);
    expect(message.failedListeners.length + message.failedListenersOmitted).toBe(2000);
    expect(message.traffic.listeners.length).toBeGreaterThan(0);
  });

  it('says nothing of reusePort or failures in heartbeats when the node does not report them', async () => {
    await makeClient().start();
    await vi.waitUntil(() => received.some((m) => (m as { type: string }).type === 'heartbeat'), {
      ...POLL,
      timeout: 3000,
    });
    expect(received[0]).not.toHaveProperty('reusePort');
    expect(received[0]).not.toHaveProperty('boundVips');
    expect(received.find((m) => (m as { type: string }).type === 'heartbeat')).not.toHaveProperty('failedListeners');
  });

  it('says it is applying as a big config arrives and until its ack, so the controller waits longer', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    await makeClient(async (snap) => {
      if (snap.version === 6) await gate;
      applied.push(snap);
    }).start();
    await vi.waitUntil(() => received.length > 0, POLL);
    // Over APPLYING_NOTICE_CHARS (1 MiB): announced before it is parsed, not at the next heartbeat (1 s).
    const many = Array.from({ length: 4000 }, (_, i) => listener(`lsn-${String(i).padStart(20, '0')}`, 1000 + i));
    sendSnapshot(snapshot(6, many));
    const beat = (m: unknown) => (m as { type: string }).type === 'heartbeat';
    await vi.waitUntil(() => received.some((m) => beat(m) && (m as { applying?: number }).applying === 6), POLL);
    expect(received.some((m) => (m as { type: string }).type === 'ack')).toBe(false);
    open();
    await vi.waitUntil(acked(6), POLL);
    const afterAck = received.length;
    await vi.waitUntil(() => received.slice(afterAck).some(beat), { timeout: 3000, interval: 20 });
    expect(received.slice(afterAck).find(beat)).not.toHaveProperty('applying');
  });

  it('nacks a snapshot the node cannot apply, ignores an invalid message, and keeps the last good config', async () => {
    await makeClient(async (snap) => {
      if (snap.listeners.some((l) => l.port === 1001)) throw new Error('port 1001 is taken');
      applied.push(snap);
    }).start();
    await vi.waitUntil(() => received.length > 0, POLL);
    sendSnapshot(snapshot(5, [listener('lsn-00000000000000000001', 1000)]));
    await vi.waitUntil(acked(5), POLL);
    sendSnapshot(snapshot(6, [listener('lsn-00000000000000000001', 1001)]));
    await vi.waitUntil(() => received.some((m) => (m as { type: string }).type === 'nack'), POLL);
    expect(received.find((m) => (m as { type: string }).type === 'nack')).toMatchObject({
      version: 6,
      reason: 'port 1001 is taken',
    });
    server!.send('not json');
    sendSnapshot({ ...snapshot(7, []), l7Nodes: 'none' } as unknown as NodeSnapshot); // not a listener's: refused whole
    sendSnapshot(snapshot(8, [listener('lsn-00000000000000000001', 1002)]));
    await vi.waitUntil(acked(8), POLL);
    expect(applied.map((a) => a.version)).toEqual([5, 8]);
    expect(
      received.filter((m) => (m as { type: string }).type === 'ack').map((m) => (m as { version: number }).version),
    ).toEqual([5, 8]);
  });

  it('refuses an unreadable listener alone: the others are applied, it keeps its last good config, the ack names it', async () => {
    await makeClient().start();
    await vi.waitUntil(() => received.length > 0, POLL);
    const [a, b, c] = ['lsn-00000000000000000001', 'lsn-00000000000000000002', 'lsn-00000000000000000003'];
    sendSnapshot(snapshot(5, [listener(a, 1000), listener(b, 1001)]));
    await vi.waitUntil(acked(5), POLL);
    // b moves to a port no node can bind, c is new and fine; a duplicate of c is refused as such.
    const next = snapshot(6, [listener(a, 1000), { ...listener(b, 70000) }, listener(c, 1003), listener(c, 1004)]);
    sendSnapshot(next);
    await vi.waitUntil(acked(6), POLL);
    const six = applied.at(-1)!;
    expect(six.listeners.map((l) => [l.id, l.port])).toEqual([
      [a, 1000],
      [b, 1001],
      [c, 1003],
    ]);
    const ack = received.find((m) => (m as { version?: number; type: string }).version === 6) as {
      type: string;
      failedListeners: { listenerId: string; reason: string }[];
    };
    expect(ack.type).toBe('ack');
    expect(ack.failedListeners.map((f) => f.listenerId).sort()).toEqual([b, c]);
    expect(ack.failedListeners.find((f) => f.listenerId === b)!.reason).toContain('/port');

    // A delta that fixes b clears it; one that breaks a new listener leaves it out and names it.
    const d = 'lsn-00000000000000000004';
    sendDelta(6, 7, [listener(b, 1002), { ...listener(d, 1005), idleTimeout: 0 }], [c]);
    await vi.waitUntil(acked(7), POLL);
    expect(client!.current!.listeners.map((l) => [l.id, l.port])).toEqual([
      [a, 1000],
      [b, 1002],
    ]);
    const ack7 = received.find((m) => (m as { version?: number }).version === 7) as {
      failedListeners: { listenerId: string }[];
    };
    expect(ack7.failedListeners.map((f) => f.listenerId)).toEqual([d]);
    // The saved snapshot holds what is served, so it loads whole at the next start.
    await client!.flushed();
    const saved = JSON.parse(readFileSync(join(dir, 'last-known-good.json'), 'utf8'));
    expect(saved.listeners.map((l: { port: number }) => l.port)).toEqual([1000, 1002]);
  });

  it('serves the saved snapshot at start, before the control plane answers (static stability)', async () => {
    await saveVersion9();
    wss.close();
    const offline = makeClient();
    await offline.start();
    expect(applied.map((s) => s.version)).toEqual([9]);
    expect(offline.current?.version).toBe(9);
  });
});

describe('control channel client restart', () => {
  it('dials while the saved snapshot is still being applied, and a delta from it waits for that apply', async () => {
    await saveVersion9();
    let release!: () => void;
    const slowSaved = new Promise<void>((r) => {
      release = r;
    });
    const started = makeClient(async (s) => {
      if (s.version === 9) await slowSaved;
      applied.push(s);
    }).start();
    // The controller hears from the node (and its heartbeats start) before the saved config is up.
    await vi.waitUntil(() => received.length > 0, POLL);
    expect(received[0]).toMatchObject({ type: 'hello', appliedVersion: 9 });
    expect(applied).toEqual([]);
    sendDelta(9, 10, [listener('lsn-00000000000000000004', 1004)], []);
    await new Promise((r) => setTimeout(r, 50)); // a fixed window on purpose: the delta is NOT applied in it
    expect(client!.current).toBeNull(); // the delta waits behind the saved apply
    release();
    await started;
    await vi.waitUntil(acked(10), POLL);
    expect(applied.map((a) => a.version)).toEqual([9, 10]);
    expect(client!.current!.listeners.map((l) => l.id)).toEqual([
      'lsn-00000000000000000003',
      'lsn-00000000000000000004',
    ]);
  });

  it('a saved snapshot that fails to apply after the hello announced it: the node resyncs from a full snapshot', async () => {
    await saveVersion9();
    makeClient(async (s) => {
      if (s.version === 9) throw new Error('port in use');
      applied.push(s);
    });
    await client!.start();
    await vi.waitUntil(() => received.length > 0, POLL);
    sendDelta(9, 10, [], []);
    // Out of step: the node drops the channel and says hello again with nothing applied.
    await vi.waitUntil(() => received.filter((m) => (m as { type: string }).type === 'hello').length === 2, POLL);
    expect(received.filter((m) => (m as { type: string }).type === 'hello').at(-1)).toMatchObject({
      appliedVersion: 0,
    });
    sendSnapshot(snapshot(11, [listener('lsn-00000000000000000005', 1005)]));
    await vi.waitUntil(acked(11), POLL);
  });
});

describe('control channel client resume', () => {
  const lsn = 'lsn-00000000000000000003';
  const typed = (type: string, version?: number) =>
    received.filter(
      (m) =>
        (m as { type: string }).type === type &&
        (version === undefined || (m as { version?: number }).version === version),
    ) as { type: string; appliedVersion?: number; appliedEpoch?: string; failedListeners?: unknown[] }[];

  it('names the epoch of what it holds in every hello, and takes a delta from its saved version as a resume', async () => {
    await makeClient().start();
    await vi.waitUntil(() => received.length > 0, POLL);
    expect(received[0]).toMatchObject({ type: 'hello', appliedVersion: 0, appliedEpoch: '', appliedDigest: '' });
    sendSnapshot({ ...snapshot(9, [listener(lsn, 1003)]), epoch: EPOCH, digest: DIGEST });
    await vi.waitUntil(acked(9), POLL);
    await client!.flushed();
    await client!.close();
    received = [];
    applied = [];

    // Restarted: the saved apply cannot bind the listener. No snapshot will restate it, so the ack says so.
    const registry = new Registry();
    makeClient(undefined, {
      registry,
      apply: async (s) => {
        applied.push(s);
        return s.version === 9 ? [{ listenerId: lsn, reason: 'address in use' }] : undefined;
      },
    });
    await client!.start();
    await vi.waitUntil(() => received.length > 0, POLL);
    expect(received[0]).toMatchObject({ type: 'hello', appliedVersion: 9, appliedEpoch: EPOCH, appliedDigest: DIGEST });
    sendDelta(9, 10, [], []);
    await vi.waitUntil(acked(10), POLL);
    expect(applied.map((a) => a.version)).toEqual([9, 10]);
    expect(client!.current!.epoch).toBe(EPOCH);
    expect(typed('ack', 10)[0]!.failedListeners).toEqual([{ listenerId: lsn, reason: 'address in use' }]);
    const counted = (await registry.getSingleMetric('slb_control_configs_applied_total')!.get()).values;
    expect(counted.map((v) => [v.labels.sent, v.value])).toEqual([['delta', 1]]);

    // The channel alone drops: the hello names the version and epoch now applied.
    server!.terminate();
    await vi.waitUntil(() => typed('hello').length === 2, POLL);
    // The delta carried no digest: the node no longer names one.
    expect(typed('hello')[1]).toMatchObject({ appliedVersion: 10, appliedEpoch: EPOCH, appliedDigest: '' });
  });
});

describe('helpers', () => {
  it('reads the saved version and epoch from the first bytes of the file, and nothing from a missing or foreign one', async () => {
    expect(await peekSaved(dir)).toBeNull();
    await saveSnapshot(dir, snapshot(1_796_000_123_456, [listener('lsn-00000000000000000001', 1000)]));
    expect(await peekSaved(dir)).toEqual({ version: 1_796_000_123_456, epoch: '', digest: '' });
    // The epoch is written second wherever the snapshot holds it, after a long deny list too.
    const deny = Array.from({ length: 50 }, (_, i) => ({ cidr: `10.0.${i}.0/24` }));
    const withEpoch = {
      ...snapshot(7, [listener('lsn-00000000000000000001', 1000)]),
      backendDeny: deny,
      epoch: EPOCH,
      digest: DIGEST,
    };
    await saveSnapshot(dir, withEpoch);
    expect(await peekSaved(dir)).toEqual({ version: 7, epoch: EPOCH, digest: DIGEST });
    expect(JSON.parse(readFileSync(join(dir, 'last-known-good.json'), 'utf8'))).toEqual(withEpoch);
    writeFileSync(join(dir, 'last-known-good.json'), JSON.stringify({ listeners: [], version: 5 }));
    expect(await peekSaved(dir)).toBeNull();
  });

  it('serialises a snapshot to the same JSON as JSON.stringify, reusing unchanged listeners', () => {
    const a = snapshot(1, [listener('lsn-00000000000000000001', 1000), listener('lsn-00000000000000000002', 1001)]);
    expect(JSON.parse(serializeSnapshot(a))).toEqual(a);
    const b = { ...a, version: 2, listeners: [a.listeners[0]!, listener('lsn-00000000000000000002', 1002)] };
    expect(JSON.parse(serializeSnapshot(b))).toEqual(b);
    expect(JSON.parse(serializeSnapshot({ version: 3, listeners: [] }))).toEqual({ version: 3, listeners: [] });
  });

  it('reconnect delays grow, are jittered and capped at 3 s', () => {
    expect(reconnectDelay(0, 200, 3000, () => 0.5)).toBe(200);
    expect(reconnectDelay(3, 200, 3000, () => 0.5)).toBe(1600);
    for (let attempt = 0; attempt < 40; attempt++)
      expect(reconnectDelay(attempt, 200, 3000, () => 0.999)).toBeLessThanOrEqual(3000);
    expect(reconnectDelay(2, 200, 3000, () => 0)).toBe(400);
  });

  it('applies a listener delta by id', () => {
    const a = { id: 'a', v: 1 };
    const b = { id: 'b', v: 1 };
    expect(
      applyListenerDelta(
        [a, b],
        [
          { id: 'b', v: 2 },
          { id: 'c', v: 1 },
        ],
        ['a'],
      ),
    ).toEqual([
      { id: 'b', v: 2 },
      { id: 'c', v: 1 },
    ]);
  });
});

describe('saveSpacingMs', () => {
  it('keeps the configured spacing for a snapshot that is quick to serialise', () => {
    expect(saveSpacingMs(500, 0)).toBe(500);
    expect(saveSpacingMs(500, 5)).toBe(500);
  });
  it('spaces slow saves so they hold the event loop at most ~2% of the time, within 10 s', () => {
    expect(saveSpacingMs(500, 25)).toBe(1250);
    expect(saveSpacingMs(500, 1000)).toBe(10_000);
  });
  it('0 turns spacing off', () => {
    expect(saveSpacingMs(0, 100)).toBe(0);
  });
});
