import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { ADMIN_TOKEN } from './helpers.js';

// One client address cannot take the whole connection cap: others (tenants, nodes) still get in.
const PER_ADDRESS = 3;
let app: FastifyInstance;
let dir: string;
let port: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'slb-api-cap-'));
  app = await buildApp({
    dbPath: join(dir, 'slb.db'),
    adminToken: ADMIN_TOKEN,
    httpLimits: { maxConnections: 20, maxConnectionsPerAddress: PER_ADDRESS },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as { port: number }).port;
});
afterAll(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

function connect(localAddress: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port, localAddress }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** What one request on the socket gets: the status line, or '' when the server closes it unanswered. */
function ask(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let data = '';
    const done = () => resolve(data.split('\r\n', 1)[0] ?? '');
    socket.on('data', (c) => {
      data += c.toString();
      if (data.includes('\r\n\r\n')) done();
    });
    socket.on('error', () => {});
    socket.once('close', done);
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  });
}

it('drops a connection over the per-address share, while another address still gets in', async () => {
  const held: Socket[] = [];
  try {
    for (let i = 0; i < PER_ADDRESS; i++) {
      const s = await connect('127.0.0.1');
      held.push(s);
      expect(await ask(s)).toBe('HTTP/1.1 200 OK');
    }
    const over = await connect('127.0.0.1');
    held.push(over);
    expect(await ask(over)).toBe('');
    const other = await connect('127.0.0.2');
    held.push(other);
    expect(await ask(other)).toBe('HTTP/1.1 200 OK');
  } finally {
    for (const s of held) s.destroy();
  }
  // Closed connections give the share back.
  for (let i = 0; i < 100; i++) {
    const count = await new Promise<number>((r) => app.server.getConnections((_e, n) => r(n)));
    if (count === 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const again = await connect('127.0.0.1');
  expect(await ask(again)).toBe('HTTP/1.1 200 OK');
  again.destroy();
}, 20_000);
