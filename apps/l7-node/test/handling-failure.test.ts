import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createL7App, type L7App } from '../src/app.js';
import { ListenerRuntime } from '../src/listener.js';
import { listener, proxyHeader, snapshot, startBackend, type TestBackend } from './helpers.js';

// A bug in the handling of one connection (here made by hand: admitting it throws) ends that connection and
// is logged; it is not an unhandled rejection, which would end the node and every connection it carries.

const REQ = Buffer.from('GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n');

function exchange(port: number, data: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const s = connect({ port, host: '127.0.0.1' }, () => s.write(data));
    const t = setTimeout(() => s.destroy(), 2000);
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(t);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
  });
}

describe('a connection whose handling fails', () => {
  let be: TestBackend;
  let app: L7App;
  let port: number;
  const rejections: unknown[] = [];
  const record = (reason: unknown) => rejections.push(reason);
  beforeAll(async () => {
    process.on('unhandledRejection', record);
    be = await startBackend('a');
    const lsn = listener({ backends: [be.spec] });
    app = createL7App({ drainMs: 200 });
    await app.apply(snapshot([lsn]));
    port = app.ports(lsn.id)!.proxy;
  });
  afterAll(async () => {
    process.off('unhandledRejection', record);
    vi.restoreAllMocks();
    await app.close();
    await be.close();
  });

  it('is closed alone, and the node carries on serving the next one', async () => {
    const admit = vi.spyOn(ListenerRuntime.prototype as unknown as { admit: () => void }, 'admit');
    admit.mockImplementationOnce(() => {
      throw new Error('a bug');
    });
    expect(await exchange(port, Buffer.concat([proxyHeader('198.51.100.7', 1, 80), REQ]))).toBe('');
    await new Promise((r) => setTimeout(r, 50));
    expect(rejections).toEqual([]);
    const next = await exchange(port, Buffer.concat([proxyHeader('198.51.100.7', 1, 80), REQ]));
    expect(next.startsWith('HTTP/1.1 200 ')).toBe(true);
  });
});
