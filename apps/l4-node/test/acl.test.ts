import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, freePort, idServer, listener, newNode, snapshot, whoAnswers } from './helpers.js';

describe('ACL at accept (real sockets)', () => {
  const node = newNode();
  let server: Awaited<ReturnType<typeof idServer>>;
  let port = 0;

  beforeAll(async () => {
    server = await idServer('acl');
    port = await freePort();
    await node.apply(
      snapshot(1, [
        listener(1, port, { acl: { mode: 'deny', cidrs: ['127.0.0.9/32'] }, backends: [backend(1, server.port)] }),
      ]),
    );
  });

  afterAll(async () => {
    await node.close();
    await server.close();
  });

  it('a denied source is closed at accept and never reaches a backend; others pass', async () => {
    const before = server.connections();
    const s = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.9' });
    const data: Buffer[] = [];
    s.on('data', (d) => data.push(d));
    s.on('error', () => {});
    // events.once would reject on the expected ECONNRESET; wait for 'close' itself.
    await new Promise((r) => s.on('close', r));
    expect(Buffer.concat(data).length).toBe(0);
    expect(server.connections()).toBe(before);
    expect(await whoAnswers(port, { localAddress: '127.0.0.10' })).toBe('acl');
    const text = await node.metrics.registry.getSingleMetricAsString('slb_l4_acl_denied_total');
    expect(text).toMatch(/\} 1$/m);
  });
});
