import { createSocket } from 'node:dgram';
import dnsPacket from 'dns-packet';
import { afterEach, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { askUdp } from './dns-client.js';
import { ADMIN_TOKEN, call, makeApp, newTenant, type TestApp } from './helpers.js';

// The DNS responder is part of the app (plugins/dns.ts): bound when the app is ready, released when it closes.

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const queryA = (name: string) =>
  dnsPacket.encode({ type: 'query', id: 9, questions: [{ type: 'A', name, class: 'IN' }] });

/** Binds UDP on the port (as the responder would) and lets it go: whether the port is free. */
function udpPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createSocket('udp4');
    socket.once('error', () => resolve(false));
    socket.bind(port, '127.0.0.1', () => socket.close(() => resolve(true)));
  });
}

it('answers an LB name with its VIP once the app is ready, and frees its port on close', async () => {
  t = await makeApp(undefined, { dns: { host: '127.0.0.1', port: 0 }, dnsZone: 'lifecycle.test' });
  const port = t.app.dnsPort;
  expect(port).toBeGreaterThan(0);
  const { token } = await newTenant(t.app, 'dns');
  const lb = await call(t.app, token, 'POST', '/v1/load-balancers', { name: 'web' });

  const reply = await askUdp(port!, queryA(`${lb.body.id}.lifecycle.test`), 2000);
  const answers = dnsPacket.decode(reply!).answers ?? [];
  expect(answers.map((a) => (a as { data: string }).data)).toEqual([lb.body.address]);

  expect(await udpPortFree(port!)).toBe(false);
  await t.close();
  t = undefined;
  expect(await udpPortFree(port!)).toBe(true);
});

it('a DNS port already taken stops the start, as a taken HTTP port would', async () => {
  const holder = createSocket('udp4');
  await new Promise<void>((resolve) => holder.bind(0, '127.0.0.1', () => resolve()));
  try {
    const app = await buildApp({
      dbPath: ':memory:',
      adminToken: ADMIN_TOKEN,
      dns: { host: '127.0.0.1', port: holder.address().port },
    });
    await expect(app.ready()).rejects.toThrow(/EADDRINUSE/);
    await app.close();
  } finally {
    holder.close();
  }
});

it('has no responder unless asked for one', async () => {
  t = await makeApp();
  expect(t.app.dnsPort).toBeNull();
});
