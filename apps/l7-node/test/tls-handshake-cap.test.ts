import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createL7App, type L7App } from '../src/app.js';
import { id, listener, makeCertificates, snapshot, startBackend, type TestBackend } from './helpers.js';

// TLS handshakes in flight are capped per https listener: one tenant's listener flooded with handshakes
// that never finish refuses the excess at once (counted), and another tenant's listener on the same node
// keeps completing its own.

const CAP = 4;

/** Opens a TCP connection that never sends its ClientHello: a handshake the node waits on. */
function stalled(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = netConnect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });
}

/** Whether the node closed `s` within `ms`. */
function closedWithin(s: Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (s.destroyed || s.readableEnded) return resolve(true);
    const t = setTimeout(() => resolve(false), ms);
    s.once('close', () => {
      clearTimeout(t);
      resolve(true);
    });
    s.on('error', () => {});
  });
}

function httpsGet(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port, servername: 'a.test', rejectUnauthorized: false }, () =>
      s.write('GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n'),
    );
    let text = '';
    s.on('data', (d: Buffer) => {
      text += d.toString('latin1');
    });
    s.on('end', () => resolve(text));
    s.on('error', reject);
    setTimeout(() => {
      s.destroy();
      resolve(text);
    }, 5000);
  });
}

describe('TLS handshakes in flight, capped per https listener', () => {
  let be: TestBackend;
  let app: L7App;
  let flooded: number;
  let other: number;
  let floodedId: string;
  let cleanup: () => void;
  const open: Socket[] = [];
  beforeAll(async () => {
    const made = makeCertificates([{ name: 'a', cn: 'a.test', sans: ['a.test'] }]);
    cleanup = made.cleanup;
    be = await startBackend('tls');
    const cert = { id: id('cert'), ...made.certs.get('a')! };
    const a = listener({ protocol: 'https', certificates: [cert], backends: [be.spec], maxTlsHandshakes: CAP });
    const b = listener({ protocol: 'https', tenantId: id('tnt'), certificates: [cert], backends: [be.spec] });
    floodedId = a.id;
    app = createL7App({ drainMs: 200 });
    await app.apply(snapshot([a, b]));
    flooded = app.ports(a.id)!.direct!;
    other = app.ports(b.id)!.direct!;
  });
  afterAll(async () => {
    for (const s of open) s.destroy();
    await app.close();
    await be.close();
    cleanup();
  });

  const refused = async () =>
    (await app.metrics.tlsHandshakesRefused.get()).values.find((v) => v.labels.listener === floodedId)?.value ?? 0;

  it('refuses handshakes past the cap at once, while another listener keeps serving', async () => {
    for (let i = 0; i < CAP; i++) open.push(await stalled(flooded));
    // The stalled ones hold every slot: they stay open.
    expect(await closedWithin(open[0]!, 200)).toBe(false);
    const excess = await stalled(flooded);
    open.push(excess);
    expect(await closedWithin(excess, 2000)).toBe(true);
    expect(await refused()).toBe(1);
    // Another tenant's https listener on the same node is untouched.
    expect(await httpsGet(other)).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('a slot comes back when a handshake ends', async () => {
    for (const s of open.splice(0)) s.destroy();
    // The node sees the closes asynchronously: retry briefly, bounded.
    let answer = '';
    for (let i = 0; i < 20 && !answer.startsWith('HTTP/1.1 200 '); i++) {
      answer = await httpsGet(flooded);
      if (!answer) await new Promise((r) => setTimeout(r, 50));
    }
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('a finished handshake gives its slot back while its connection stays open', async () => {
    const kept: Socket[] = [];
    try {
      for (let i = 0; i < CAP + 2; i++) {
        const s = await new Promise<Socket>((resolve, reject) => {
          const t = tlsConnect(
            { host: '127.0.0.1', port: flooded, servername: 'a.test', rejectUnauthorized: false },
            () => resolve(t),
          );
          t.on('error', reject);
        });
        kept.push(s);
      }
      expect(kept.every((s) => !s.destroyed)).toBe(true);
    } finally {
      for (const s of kept) s.destroy();
    }
  });
});
