import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NodeSnapshot, SnapshotListener } from '@slb/model';
import { bulkListener, largeL4Snapshot } from '@slb/test-support/large-snapshot';
import { afterEach, expect, it } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { type NodeProcess, startNode, until } from './node-process.js';

// Issue #22: a node applying a fleet's snapshot held its event loop for seconds, so it sent no heartbeat
// (the controller marked it offline, its LBs moved away and back) and its existing listeners stalled.

const ADDRESS = '127.79.0.1';
const PORT_BASE = 21000;
/** 2,500 listeners × 50 servers (~14 MB): before the apply was sliced, seconds of one event-loop block. */
const LISTENERS = 2500;
/** The controller's offline threshold: 3 missed heartbeats of 1 s (apps/api services/nodes.ts). */
const OFFLINE_AFTER_MS = 3000;

let node: NodeProcess | undefined;
let wss: WebSocketServer | undefined;
let echo: Server | undefined;
let client: Socket | undefined;
let dir: string | undefined;
afterEach(async () => {
  client?.destroy();
  await node?.stop();
  wss?.close();
  echo?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it('a node applying a fleet-sized snapshot keeps heartbeating and forwarding on the listener it already serves', async () => {
  // Stopping the node resets the connections it relayed: neither end's reset is this test's concern.
  echo = createServer((s) => s.on('error', () => {}).pipe(s));
  await new Promise<void>((r) => echo!.listen(0, '127.0.0.1', r));
  const echoPort = (echo.address() as { port: number }).port;
  const serving: SnapshotListener = {
    ...bulkListener(LISTENERS, { address: ADDRESS, port: PORT_BASE - 1, backends: 0 }),
    protocol: 'tcp',
    backends: [
      { serverId: 'srv-echo0000000000000000', address: '127.0.0.1', port: echoPort, weight: 100, healthy: true },
    ],
  };
  const snapshot = (s: NodeSnapshot) => JSON.stringify({ type: 'snapshot', kind: 'l4', snapshot: s });

  // A stand-in controller: the one-listener config on hello; heartbeats and acks as they come.
  const beats: { at: number; applying?: number }[] = [];
  const acks = new Set<number>();
  wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((r) => wss!.once('listening', r));
  let channel: WebSocket | undefined;
  wss.on('connection', (ws) => {
    channel = ws;
    ws.on('message', (d) => {
      const m = JSON.parse(d.toString());
      if (m.type === 'heartbeat') beats.push({ at: performance.now(), applying: m.applying });
      if (m.type === 'ack') acks.add(m.version);
      if (m.type === 'hello')
        ws.send(snapshot({ version: 1, generatedAt: new Date().toISOString(), listeners: [serving], l7Nodes: [] }));
    });
  });
  dir = mkdtempSync(join(tmpdir(), 'slb-large-apply-'));
  node = startNode([], {
    SLB_API_URL: `http://127.0.0.1:${(wss.address() as { port: number }).port}`,
    SLB_NODE_TOKEN: 'large-apply-test-token',
    SLB_NODE_ID: 'large-apply-test',
    SLB_NODE_ADDRESS: ADDRESS,
    SLB_STATE_DIR: dir,
    SLB_SESSION_SYNC_REDIS_URL: 'off',
    LOG_LEVEL: 'warn',
  });
  await until(() => acks.has(1), 20_000, 'ack of the first config');

  // One byte every 10 ms through the serving listener, each round trip timed.
  const rtts: { at: number; ms: number }[] = [];
  client = createConnection({ host: ADDRESS, port: PORT_BASE - 1 });
  await new Promise((r, j) => client!.once('connect', r).once('error', j));
  client.on('error', () => {});
  let sentAt = performance.now();
  client.on('data', () => {
    rtts.push({ at: sentAt, ms: performance.now() - sentAt });
    setTimeout(() => {
      sentAt = performance.now();
      if (client?.writable) client.write('x');
    }, 10);
  });
  client.write('x');

  const big = largeL4Snapshot({
    version: 2,
    listeners: LISTENERS,
    backends: 50,
    address: ADDRESS,
    portBase: PORT_BASE,
    first: [serving],
  });
  const from = performance.now();
  channel!.send(snapshot(big));
  await until(() => acks.has(2), 120_000, 'ack of the fleet-sized config');
  const to = performance.now();

  const during = beats.filter((b) => b.at >= from && b.at <= to);
  const points = [from, ...during.map((b) => b.at), to];
  const gaps = points.slice(1).map((at, i) => at - points[i]!);
  expect(Math.max(...gaps), `heartbeat gaps over ${Math.round(to - from)} ms of apply`).toBeLessThan(OFFLINE_AFTER_MS);
  // The parse of the message cannot be cut up: the node says it is applying first.
  expect(during.some((b) => b.applying === 2)).toBe(true);
  const echoes = rtts.filter((r) => r.at >= from && r.at <= to);
  // An echo every 10 ms when nothing holds the loop; sliced, about one per 80 ms of apply (the parse
  // included): at least one per 200 ms. Held whole, the apply lets none through until it ends.
  expect(echoes.length, `echoes over ${Math.round(to - from)} ms of apply`).toBeGreaterThanOrEqual(
    Math.floor((to - from) / 200),
  );
  expect(echoes.length).toBeGreaterThan(2);
  expect(Math.max(...echoes.map((r) => r.ms))).toBeLessThan(OFFLINE_AFTER_MS);
}, 180_000);
