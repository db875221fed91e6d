import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createL7App, type L7App } from '../src/app.js';
import { listener, proxyHeader, snapshot, startBackend, type TestBackend } from './helpers.js';

// A PROXY header is believed only from the fleet's L4 nodes (the snapshot's l4Nodes): from anyone else the
// connection is closed before a byte is read and counted, so a forged client address cannot pass another
// tenant's allow-list. 127.0.0.11 plays the L4 node; the attacker connects from 127.0.0.1.

const L4 = '127.0.0.11';
const REQ = Buffer.from('GET /in HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n');

/** Sends `data` from `localAddress`; resolves with what came back once the node closed (or 2 s passed). */
function exchangeFrom(localAddress: string, port: number, data: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const s: Socket = connect({ port, host: '127.0.0.1', localAddress }, () => s.write(data));
    const done = () => {
      clearTimeout(t);
      resolve(Buffer.concat(chunks).toString('latin1'));
    };
    const t = setTimeout(() => {
      s.destroy();
      done();
    }, 2000);
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', done);
    s.on('close', done);
  });
}

describe('PROXY headers only from the fleet’s L4 nodes', () => {
  let be: TestBackend;
  let app: L7App;
  let proxyPort: number;
  const l = () => listener({ backends: [be.spec], acl: { mode: 'allow', cidrs: ['198.51.100.0/24'] } });
  let lsn: ReturnType<typeof listener>;
  beforeAll(async () => {
    be = await startBackend('a');
    lsn = l();
    app = createL7App({ drainMs: 200 });
    await app.apply({ ...snapshot([lsn]), l4Nodes: [L4] });
    proxyPort = app.ports(lsn.id)!.proxy;
  });
  afterAll(async () => {
    await app.close();
    await be.close();
  });

  const untrusted = async () =>
    (await app.metrics.untrustedPeers.get()).values.find((v) => v.labels.listener === lsn.id)?.value ?? 0;

  it('a forged PROXY header from a peer that is not an L4 node cannot pass the allow ACL', async () => {
    const before = be.requests.length;
    const answer = await exchangeFrom('127.0.0.1', proxyPort, Buffer.concat([proxyHeader('198.51.100.7', 1, 80), REQ]));
    expect(answer).toBe('');
    expect(be.requests.length).toBe(before);
    expect(await untrusted()).toBe(1);
  });

  it('the same header from an L4 node is believed (and the ACL still judges the client it names)', async () => {
    const ok = await exchangeFrom(L4, proxyPort, Buffer.concat([proxyHeader('198.51.100.7', 1, 80), REQ]));
    expect(ok.startsWith('HTTP/1.1 200 ')).toBe(true);
    const denied = await exchangeFrom(L4, proxyPort, Buffer.concat([proxyHeader('203.0.113.7', 1, 80), REQ]));
    expect(denied).toBe('');
    expect(await untrusted()).toBe(1);
  });

  it('a new snapshot moves the trust: the old L4 address is refused, the new one taken', async () => {
    await app.apply({ ...snapshot([lsn], 2), l4Nodes: ['127.0.0.12'] });
    const old = await exchangeFrom(L4, proxyPort, Buffer.concat([proxyHeader('198.51.100.7', 1, 80), REQ]));
    expect(old).toBe('');
    const now = await exchangeFrom('127.0.0.12', proxyPort, Buffer.concat([proxyHeader('198.51.100.7', 1, 80), REQ]));
    expect(now.startsWith('HTTP/1.1 200 ')).toBe(true);
  });

  it('a snapshot naming no fleet (standalone --config) accepts PROXY headers from any peer', async () => {
    await app.apply(snapshot([lsn], 3));
    const any = await exchangeFrom('127.0.0.1', proxyPort, Buffer.concat([proxyHeader('198.51.100.7', 1, 80), REQ]));
    expect(any.startsWith('HTTP/1.1 200 ')).toBe(true);
  });
});
