import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { ADMIN_TOKEN } from './helpers.js';

it('a request that arrives while the API closes is a 503 problem with a request id', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'slb-api-drain-'));
  const app = await buildApp({ dbPath: join(dir, 'slb.db'), adminToken: ADMIN_TOKEN });
  let release = () => {};
  const held = new Promise<void>((r) => {
    release = r;
  });
  let entered = () => {};
  const inHandler = new Promise<void>((r) => {
    entered = r;
  });
  app.get('/test-only/slow', { schema: { hide: true } }, async () => {
    entered();
    await held;
    return { ok: true };
  });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    const socket = createConnection({ host: '127.0.0.1', port });
    let data = '';
    socket.on('data', (c) => {
      data += c.toString();
    });
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    // A keep-alive connection busy with a slow request when close begins, then a second request on it.
    socket.write('GET /test-only/slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await inHandler;
    const closing = app.close();
    await new Promise((r) => setTimeout(r, 100));
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nx-request-id: drain-1\r\n\r\n');
    await new Promise((r) => setTimeout(r, 100));
    release();
    await Promise.race([closed, new Promise((r) => setTimeout(r, 10_000))]);
    socket.destroy();
    await closing;
    const second = data.slice(data.indexOf('HTTP/1.1', 1));
    expect(data).toMatch(/^HTTP\/1\.1 200/);
    expect(second).toMatch(/^HTTP\/1\.1 503/);
    expect(second).toMatch(/content-type: application\/problem\+json/i);
    expect(second).toMatch(/x-request-id: drain-1/i);
    expect(second).toMatch(/x-content-type-options: nosniff/i);
    const body = JSON.parse(second.slice(second.indexOf('\r\n\r\n') + 4)) as { requestId: string; code: string };
    expect(body).toMatchObject({ code: 'not_ready', requestId: 'drain-1' });
  } finally {
    await app.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}, 20_000);
