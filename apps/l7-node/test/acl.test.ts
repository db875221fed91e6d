import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { createL7App } from '../src/app.js';
import { listener, proxyHeader, rawExchange, snapshot, startApp, startBackend } from './helpers.js';

// The listener ACL applies to the real client: the PROXY v2 source when there is one.

describe('listener ACL', () => {
  it('refuses clients outside an allow list, judged by the PROXY v2 source', async () => {
    const be = await startBackend('a');
    const node = await startApp(listener({ backends: [be.spec], acl: { mode: 'allow', cidrs: ['198.51.100.0/24'] } }));
    const req = Buffer.from('GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n');
    const allowed = await rawExchange(node.proxy, Buffer.concat([proxyHeader('198.51.100.7', 1000, 80), req]));
    expect(allowed.startsWith('HTTP/1.1 200')).toBe(true);
    const denied = await rawExchange(node.proxy, Buffer.concat([proxyHeader('203.0.113.7', 1000, 80), req]));
    expect(denied).toBe('');
    await expect(request(`${node.url}/`)).rejects.toThrow(); // 127.0.0.1 on the direct port: not in the list
    expect(be.requests).toHaveLength(1);
    await node.app.close();
    await be.close();
  });

  it('a listener with an ACL entry that is no CIDR fails alone, naming the entry; the others apply', async () => {
    const be = await startBackend('a');
    const app = createL7App({ drainMs: 200 });
    const bad = listener({ backends: [be.spec], acl: { mode: 'deny', cidrs: ['192.0.2.0/24', '10.0.0.0/33'] } });
    const good = listener({ backends: [be.spec], acl: { mode: 'deny', cidrs: ['2001:db8::/32'] } });
    expect(await app.apply(snapshot([bad, good]))).toEqual([
      { listenerId: bad.id, reason: 'acl: invalid ACL CIDR "10.0.0.0/33"' },
    ]);
    expect(app.ports(bad.id)).toBeUndefined();
    const res = await request(`http://127.0.0.1:${app.ports(good.id)!.direct}/`);
    expect(res.statusCode).toBe(200);
    await res.body.dump();
    await app.close();
    await be.close();
  });
});
