import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENROLL_PATH, type NodeSnapshot, NodeSnapshot as NodeSnapshotSchema } from '@slb/model';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { ControlChannelClient } from './control-channel.js';
import { resolveCredential } from './node-credential.js';

// A node given several API replicas (SLB_API_URL=a,b): it moves to the next one when its replica dies, and
// keeps its last applied config meanwhile. The replicas are WebSocket servers in this process.

const POLL = { timeout: 5000, interval: 10 };
const log: { msg: string; obj: Record<string, unknown>; at: number }[] = [];
const record = (obj: object, msg = '') => void log.push({ msg, obj: obj as Record<string, unknown>, at: Date.now() });
const logger = { info: record, warn: record, error: record };
const snapshot = (version: number): NodeSnapshot => ({
  version,
  generatedAt: new Date().toISOString(),
  listeners: [],
  l7Nodes: [],
});

/**
 * A replica: a WebSocket server that answers each hello with `version`, remembering what it heard, and
 * `/readyz` with 200 while `ready` (else 503; 'flapping': one answer in two).
 */
interface Replica {
  url: string;
  port: number;
  received: { type: string; version?: number }[];
  ready: boolean | 'flapping';
  kill(): Promise<void>;
}

async function replica(version: number, port = 0): Promise<Replica> {
  let asked = 0;
  const http = createServer((req, res) => {
    const ready = self.ready === 'flapping' ? asked++ % 2 === 0 : self.ready;
    res.statusCode = req.url === '/readyz' && ready ? 200 : 503;
    res.end();
  });
  const wss = new WebSocketServer({ server: http });
  await new Promise<void>((r) => http.listen(port, '127.0.0.1', r));
  const received: Replica['received'] = [];
  wss.on('connection', (ws: WebSocket) => {
    ws.on('message', (d) => {
      const m = JSON.parse(d.toString());
      received.push(m);
      if (m.type === 'hello') ws.send(JSON.stringify({ type: 'snapshot', kind: 'l4', snapshot: snapshot(version) }));
    });
  });
  const bound = (http.address() as { port: number }).port;
  const self: Replica = {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    received,
    ready: true,
    kill: async () => {
      for (const c of wss.clients) c.terminate();
      await new Promise((r) => wss.close(r));
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    },
  };
  return self;
}

/** A port nothing listens on: a dial there is refused at once. */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

let dir: string;
let client: ControlChannelClient<NodeSnapshot> | null = null;
const replicas: Replica[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'slb-failover-'));
  log.length = 0;
});
afterEach(async () => {
  await client?.close();
  client = null;
  await Promise.all(replicas.splice(0).map((r) => r.kill()));
  rmSync(dir, { recursive: true, force: true });
});

function makeClient(apiUrls: string[], registry?: Registry, returnProbeMs?: number) {
  const applied: number[] = [];
  client = new ControlChannelClient<NodeSnapshot>({
    apiUrls,
    token: 'node-token-0123456789',
    nodeId: 'node-1',
    kind: 'l4',
    address: '127.0.0.1',
    capacity: 100,
    stateDir: dir,
    schema: NodeSnapshotSchema,
    apply: async (s) => void applied.push(s.version),
    load: () => ({ activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 }),
    logger,
    registry,
    returnProbeMs,
  });
  return { client, applied };
}

const connectedTo = (replica: number) =>
  log.some((l) => l.msg === 'control channel connected' && l.obj.replica === replica);

describe('control channel with several API replicas', () => {
  it('skips a dead first replica with one failed dial, and says where it connected (log and gauge)', async () => {
    const b = await replica(3);
    replicas.push(b);
    const registry = new Registry();
    const { client, applied } = makeClient([`http://127.0.0.1:${await deadPort()}`, b.url], registry);
    const started = Date.now();
    await client.start();
    await vi.waitUntil(() => applied.includes(3), POLL);
    // No backoff between the two: the first refused, the second was dialed at once.
    expect(Date.now() - started).toBeLessThan(1000);
    expect(log.filter((l) => l.msg === 'control channel error')).toHaveLength(1);
    const connected = log.find((l) => l.msg === 'control channel connected')!;
    expect(connected.obj).toMatchObject({
      replica: 1,
      replicas: 2,
      url: `${b.url.replace('http', 'ws')}/control/v1/channel`,
    });
    expect((await registry.getSingleMetric('slb_control_plane_replica')!.get()).values[0]!.value).toBe(1);
  });

  it('when its replica dies it keeps its config, moves to the next one, and moves back once the first is ready again', async () => {
    const a = await replica(5);
    const b = await replica(7);
    replicas.push(b);
    const registry = new Registry();
    const { client, applied } = makeClient([a.url, b.url], registry, 40);
    await client.start();
    await vi.waitUntil(() => applied.includes(5), POLL);
    expect(connectedTo(0)).toBe(true);
    await a.kill();
    await vi.waitUntil(() => !client.connected, POLL);
    // Disconnected: the last applied config is still the node's, and nothing was taken away from it.
    expect(client.current?.version).toBe(5);
    expect(applied).toEqual([5]);
    await vi.waitUntil(() => applied.includes(7), POLL);
    expect(connectedTo(1)).toBe(true);
    expect((await registry.getSingleMetric('slb_control_plane_replica')!.get()).values[0]!.value).toBe(1);
    // a's port answers again, not ready (its database away), then ready one probe in two: the node stays on b.
    const back = await replica(9, a.port);
    replicas.push(back);
    back.ready = false;
    await new Promise((r) => setTimeout(r, 400));
    back.ready = 'flapping';
    await new Promise((r) => setTimeout(r, 400));
    expect(applied).toEqual([5, 7]);
    expect(back.received).toEqual([]);
    // Ready for good: the node goes back to the first replica of its list (which every node of the fleet
    // prefers), so the fleet is not left split between replicas, each placing LBs on its own nodes.
    back.ready = true;
    await vi.waitUntil(() => applied.includes(9), POLL);
    expect(back.received.filter((m) => m.type === 'hello')).toHaveLength(1);
    expect(log.some((l) => l.msg === 'an earlier API replica is ready: moving back')).toBe(true);
    expect(log.some((l) => l.msg === 'control channel lost')).toBe(true); // a's death, not the move back
    expect(log.filter((l) => l.msg === 'control channel lost')).toHaveLength(1);
    expect(b.received.filter((m) => m.type === 'hello')).toHaveLength(1);
  });

  it('on its first replica, or with moving back turned off, it asks no other replica', async () => {
    const a = await replica(5);
    const b = await replica(7);
    replicas.push(a, b);
    const { client, applied } = makeClient([b.url, a.url], undefined, 0);
    await client.start();
    await vi.waitUntil(() => applied.includes(7), POLL);
    await b.kill();
    await vi.waitUntil(() => applied.includes(5), POLL);
    replicas.push(await replica(9, b.port));
    await new Promise((r) => setTimeout(r, 400));
    expect(applied).toEqual([7, 5]);
  });

  it('with every replica down it goes round the list with backoff until one answers', async () => {
    const ports = [await deadPort(), await deadPort()];
    const { client, applied } = makeClient(ports.map((p) => `http://127.0.0.1:${p}`));
    await client.start();
    await new Promise((r) => setTimeout(r, 700));
    const errors = log.filter((l) => l.msg === 'control channel error').map((l) => l.obj.replica);
    // Both replicas tried, in turn, and not in a tight loop (backoff between rounds: 100-300, 200-600 ms …).
    expect(errors.length).toBeGreaterThanOrEqual(2);
    expect(errors.every((replica, i) => replica === i % 2)).toBe(true);
    expect(errors.length).toBeLessThan(12);
    const b = await replica(4, ports[1]);
    replicas.push(b);
    await vi.waitUntil(() => applied.includes(4), POLL);
    expect(connectedTo(1)).toBe(true);
  });
});

describe('control channel with one API URL', () => {
  it('dials a dead API at least once a second once the backoff is at its cap, so a restarted one is found within a second', async () => {
    const { client } = makeClient([`http://127.0.0.1:${await deadPort()}`]);
    const started = Date.now();
    await client.start();
    // 200 ms doubling, jittered ±50%: with a 3 s cap the fourth wait is 0.8-2.4 s and the fifth 1.5-3 s, both
    // over by 7 s. The margin is for a busy machine's late timers.
    await new Promise((r) => setTimeout(r, 7000));
    const dials = [started, ...log.filter((l) => l.msg === 'control channel error').map((l) => l.at)];
    const gaps = dials.slice(1).map((t, i) => t - dials[i]!);
    expect(gaps.length).toBeGreaterThanOrEqual(6);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(1400);
  }, 12_000);
});

describe('enrollment with several API replicas', () => {
  let api: Server | undefined;
  afterEach(() => api?.close());

  it('tries each URL until one answers', async () => {
    let asked = 0;
    api = createServer((req, res) => {
      asked++;
      expect(req.url).toBe(ENROLL_PATH);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ nodeId: 'node-9', kind: 'l4', address: '127.0.0.9', credential: 'c'.repeat(40) }));
    });
    await new Promise<void>((r) => api!.listen(0, '127.0.0.1', r));
    const live = `http://127.0.0.1:${(api.address() as { port: number }).port}`;
    const started = Date.now();
    const credential = await resolveCredential({
      apiUrls: [`http://127.0.0.1:${await deadPort()}`, live],
      stateDir: dir,
      kind: 'l4',
      joinToken: 'join-token-0123456789',
      logger,
    });
    expect(credential).toMatchObject({ nodeId: 'node-9', address: '127.0.0.9' });
    expect(asked).toBe(1);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(log.find((l) => l.msg === 'enrollment failed; retrying')?.obj.replica).toBe(0);
    expect(log.find((l) => l.msg === 'enrolled: credential saved')?.obj.replica).toBe(1);
  });
});
