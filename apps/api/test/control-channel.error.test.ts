import { createConnection, isIP, type Socket } from 'node:net';
import { Value } from '@sinclair/typebox/value';
import { CONTROL_CHANNEL_PATH, HelloMessage, NODE_MESSAGE_MAX_BYTES, NodeMessage } from '@slb/model';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { ADMIN_TOKEN, call, dumpDatabase, makeApp, type TestApp } from './helpers.js';
import { invalidValue, nastyString, type Schema, toJsonText } from './openapi-fuzz.js';

// Bad input on the control channel, from a peer that holds the node token: malformed, truncated and
// oversized messages, and broken WebSocket frames. Each is refused (an `error` reply, or the connection
// closed), nothing is written, and the API keeps serving nodes and clients.

const NODE_TOKEN = 'channel-node-token-0123456789';
let t: TestApp;
let url: string;
let port: number;

beforeAll(async () => {
  t = await makeApp(undefined, { nodeToken: NODE_TOKEN });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  port = (t.app.server.address() as { port: number }).port;
  url = `ws://127.0.0.1:${port}${CONTROL_CHANNEL_PATH}`;
});
afterAll(() => t.close());

async function open(): Promise<{ ws: WebSocket; replies: string[]; closed: Promise<number> }> {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${NODE_TOKEN}` } });
  const replies: string[] = [];
  ws.on('message', (d) => replies.push(d.toString()));
  ws.on('error', () => {});
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return { ws, replies, closed };
}

/** Replies come within milliseconds and the fuzz waits for many; a fine poll keeps the file fast. */
const POLL = { timeout: 5000, interval: 5 };

/** A real node's hello, and the API answering it with a snapshot: the channel still works. */
async function channelWorks(nodeId: string): Promise<void> {
  const { ws, replies } = await open();
  ws.send(
    JSON.stringify({ type: 'hello', nodeId, kind: 'l4', address: '127.0.0.70', capacity: 100, appliedVersion: 0 }),
  );
  await vi.waitUntil(() => replies.some((r) => JSON.parse(r).type === 'snapshot'), POLL);
  ws.close();
  expect((await call(t.app, ADMIN_TOKEN, 'GET', `/v1/nodes/${nodeId}`)).status).toBe(200);
}

const hello = {
  type: 'hello',
  nodeId: 'node-good',
  kind: 'l4',
  address: '127.0.0.71',
  capacity: 100,
  appliedVersion: 0,
};
const valid = [
  hello,
  { type: 'heartbeat', load: { activeConnections: 1, newConnectionsPerSecond: 2, requestsPerSecond: 3 } },
  { type: 'ack', version: 5 },
  { type: 'nack', version: 5, reason: 'bad listener' },
];

describe('control channel: bad messages', () => {
  it('malformed, truncated and schema-breaking messages each get an error reply and change nothing', async () => {
    const before = await dumpDatabase(t.app);
    const { ws, replies } = await open();
    const message = fc.oneof(
      nastyString(300),
      fc
        .tuple(fc.constantFrom(...valid.map((v) => JSON.stringify(v))), fc.nat())
        .map(([text, n]) => text.slice(0, 1 + (n % (text.length - 1)))),
      invalidValue(NodeMessage as unknown as Schema, { ids: [], byName: {} }).map(toJsonText),
      fc.constantFrom('', 'null', '[]', '{}', '{"type":"hello"}', '{"type":"hello","__proto__":{"x":1}}'),
      fc.constantFrom(
        // A hello that would push the controller's version past what a number can count.
        JSON.stringify({ ...hello, appliedVersion: 2 ** 53 }),
        JSON.stringify({ ...hello, appliedVersion: 1e308 }),
        JSON.stringify({ ...hello, address: 'not-an-ip' }),
        JSON.stringify({ ...hello, nodeId: '../etc' }),
      ),
    );
    // A generated message may be a valid hello by chance; that one is a real node, not bad input.
    const isGoodHello = (text: string) => {
      try {
        const m = JSON.parse(text);
        return Value.Check(HelloMessage, m) && isIP(m.address) !== 0;
      } catch {
        return false;
      }
    };
    // Oversized ones close the connection instead: they have their own test below.
    const sent = fc
      .sample(message, { numRuns: 500, seed: 7 })
      .filter((text) => !isGoodHello(text) && Buffer.byteLength(text) <= NODE_MESSAGE_MAX_BYTES);
    expect(sent.length).toBeGreaterThan(400);
    for (const text of sent) ws.send(text);
    await vi.waitUntil(() => replies.length === sent.length, { ...POLL, timeout: 10_000 });
    const types = new Set(replies.map((r) => JSON.parse(r).type));
    expect([...types]).toEqual(['error']);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.close();
    expect(await dumpDatabase(t.app)).toBe(before);
    await channelWorks('node-after-garbage');
  });

  it('a binary message is refused with a reason', async () => {
    const before = await dumpDatabase(t.app);
    const { ws, replies } = await open();
    ws.send(Buffer.from(JSON.stringify(hello)));
    await vi.waitUntil(() => replies.length === 1, POLL);
    expect(JSON.parse(replies[0]!)).toMatchObject({ type: 'error', reason: expect.stringContaining('binary') });
    ws.close();
    expect(await dumpDatabase(t.app)).toBe(before);
  });

  it('an oversized message closes the connection (1009) before it is read, and changes nothing', async () => {
    const before = await dumpDatabase(t.app);
    const { ws, closed } = await open();
    ws.send(JSON.stringify({ ...hello, nodeId: 'node-big', pad: 'x'.repeat(NODE_MESSAGE_MAX_BYTES) }));
    expect(await closed).toBe(1009);
    expect(await dumpDatabase(t.app)).toBe(before);
    await channelWorks('node-after-oversize');
  });
});

/** Upgrades a raw socket, so frames can be written byte by byte, broken as no WebSocket library would. */
async function rawChannel(): Promise<Socket> {
  const socket = createConnection({ host: '127.0.0.1', port });
  socket.on('error', () => {});
  await new Promise((r) => socket.once('connect', r));
  socket.write(
    `GET ${CONTROL_CHANNEL_PATH} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n` +
      `Authorization: Bearer ${NODE_TOKEN}\r\n\r\n`,
  );
  await new Promise<void>((resolve) => {
    let head = '';
    const onData = (d: Buffer) => {
      head += d.toString('latin1');
      if (head.includes('\r\n\r\n')) {
        socket.off('data', onData);
        expect(head.startsWith('HTTP/1.1 101')).toBe(true);
        resolve();
      }
    };
    socket.on('data', onData);
  });
  return socket;
}

const mask = Buffer.from([1, 2, 3, 4]);
const masked = (payload: Buffer) => Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
/** A client frame: FIN + opcode, mask bit, 7-bit length, mask, masked payload. */
const frame = (first: number, payload: Buffer, withMask = true) =>
  Buffer.concat([
    Buffer.from([first, (withMask ? 0x80 : 0) | payload.length]),
    withMask ? mask : Buffer.alloc(0),
    withMask ? masked(payload) : payload,
  ]);

describe('control channel: broken frames', () => {
  const text = Buffer.from('{"type":"ack","version":1}');
  it.each([
    ['an unmasked client frame', frame(0x81, text, false)],
    ['a reserved opcode', frame(0x83, text)],
    ['reserved bits set', frame(0xf1, text)],
    ['a fragmented control frame', frame(0x09, Buffer.from('ping'))],
    ['a close frame with a bad code', frame(0x88, Buffer.from([0x03, 0xe7]))],
    ['text that is not UTF-8', frame(0x81, Buffer.from([0xff, 0xfe, 0xfd]))],
    [
      'a 64-bit length past any limit',
      Buffer.concat([Buffer.from([0x81, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), mask]),
    ],
  ])('%s closes that connection and nothing else', async (_what, bytes) => {
    const before = await dumpDatabase(t.app);
    const socket = await rawChannel();
    const closed = new Promise((r) => socket.once('close', r));
    socket.write(bytes);
    await closed;
    expect(await dumpDatabase(t.app)).toBe(before);
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  it('a frame cut off half way, then a hang-up, leaves the API serving', async () => {
    const socket = await rawChannel();
    const whole = frame(0x81, Buffer.from(JSON.stringify(hello)));
    socket.write(whole.subarray(0, whole.length - 10));
    await new Promise((r) => setTimeout(r, 50));
    socket.destroy();
    await channelWorks('node-after-truncated-frame');
    expect((await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes/node-good')).status).toBe(404);
  });
});
