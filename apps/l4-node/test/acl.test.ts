import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileAcl } from '../src/acl.js';
import { backend, freePort, idServer, listener, newNode, snapshot, whoAnswers } from './helpers.js';

describe('ACL compilation', () => {
  it('allow lists only admit listed sources; deny lists refuse them; v4-mapped v6 is treated as v4', () => {
    const allow = compileAcl({ mode: 'allow', cidrs: ['10.0.0.0/8', '2001:db8::/32', '192.0.2.7'] });
    const deny = compileAcl({ mode: 'deny', cidrs: ['127.0.0.9/32'] });
    if (!allow.ok || !deny.ok || !allow.check || !deny.check) throw new Error('should compile');
    expect(allow.check('10.200.1.1')).toBe(true);
    expect(allow.check('::ffff:10.200.1.1')).toBe(true);
    expect(allow.check('11.0.0.1')).toBe(false);
    expect(allow.check('2001:db8:1::5')).toBe(true);
    expect(allow.check('192.0.2.7')).toBe(true);
    expect(allow.check('192.0.2.8')).toBe(false);
    expect(deny.check('127.0.0.9')).toBe(false);
    expect(deny.check('127.0.0.1')).toBe(true);
  });

  it('no ACL and an empty deny list cost nothing; bad CIDRs are reasons, not exceptions', () => {
    expect(compileAcl(undefined)).toEqual({ ok: true, check: undefined });
    expect(compileAcl({ mode: 'deny', cidrs: [] })).toEqual({ ok: true, check: undefined });
    expect(compileAcl({ mode: 'allow', cidrs: ['10.0.0.0/33'] })).toEqual({
      ok: false,
      reason: 'invalid ACL CIDR "10.0.0.0/33"',
    });
    expect(compileAcl({ mode: 'allow', cidrs: ['1.2.3'] }).ok).toBe(false);
  });
});

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
