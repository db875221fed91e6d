import dgram from 'node:dgram';
import { once } from 'node:events';
import net from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { L4Node, type L4NodeOptions } from '../src/app.js';
import { L4Metrics } from '../src/metrics.js';
import { backend, freePort, idServer, listener, snapshot, whoAnswers } from './helpers.js';

// A listener whose address:port another process holds is a failure the node reports, keeps reporting while
// it lasts (currentFailures, sent in every heartbeat) and retries until the port is free.

const VIP = '127.1.0.5';
const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

function node(extra: Partial<L4NodeOptions> = {}): L4Node {
  const n = new L4Node({
    logger: pino({ level: 'silent' }),
    metrics: new L4Metrics({ defaultMetrics: false }),
    ...extra,
  });
  cleanup.push(() => n.close());
  return n;
}

/** A plain net server holding `host:port`, as another process on the host would. */
async function occupy(host: string, port: number): Promise<() => Promise<void>> {
  const s = net.createServer().listen(port, host);
  await once(s, 'listening');
  const release = () => new Promise<void>((r) => (s.listening ? s.close(() => r()) : r()));
  cleanup.push(release);
  return release;
}

async function metric(n: L4Node, name: string, labels: Record<string, string> = {}): Promise<number> {
  const got = await n.metrics.registry.getSingleMetric(name)!.get();
  return got.values
    .filter((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val))
    .reduce((sum, v) => sum + v.value, 0);
}

describe('bind failures are state, retried until the listener binds', () => {
  it('reports EADDRINUSE on a VIP, keeps it in currentFailures, and serves once the holder lets go', async () => {
    const be = await idServer('origin');
    cleanup.push(be.close);
    const port = await freePort(VIP);
    const release = await occupy(VIP, port);
    const n = node();
    const lsn = listener(1, port, { bindAddresses: [VIP], backends: [backend(1, be.port)] });
    const acked = await n.apply(snapshot(1, [lsn]));
    const reason = `cannot bind tcp ${VIP}:${port}: EADDRINUSE`;
    expect(acked).toEqual([{ listenerId: lsn.id, reason }]);
    expect(n.currentFailures()).toEqual([{ listenerId: lsn.id, reason }]);
    expect(await metric(n, 'slb_l4_listeners_bind_failing')).toBe(1);
    // Still failing after a retry (250 ms doubling), and said so each time it is asked.
    await vi.waitFor(
      async () => expect(await metric(n, 'slb_l4_bind_retries_total', { result: 'failed' })).toBeGreaterThan(0),
      { timeout: 5000, interval: 50 },
    );
    expect(n.currentFailures()).toEqual([{ listenerId: lsn.id, reason }]);

    await release();
    await vi.waitUntil(() => n.listeners.has(lsn.id), 8000);
    expect(n.currentFailures()).toEqual([]);
    expect(await metric(n, 'slb_l4_listeners_bind_failing')).toBe(0);
    expect(await metric(n, 'slb_l4_bind_retries_total', { result: 'bound' })).toBe(1);
    const c = net.connect({ host: VIP, port });
    const greeting = await new Promise<string>((resolve, reject) => {
      c.once('data', (d) => resolve(d.toString()));
      c.once('error', reject);
    });
    c.destroy();
    expect(greeting).toBe('origin\n');
  });

  it.each([false, true])(
    'reports a port held on 0.0.0.0 by another socket as EADDRINUSE on the VIP (TCP and UDP, reusePort %s)',
    async (reusePort) => {
      const port = await freePort('0.0.0.0');
      await occupy('0.0.0.0', port);
      const udpHolder = dgram.createSocket('udp4');
      udpHolder.bind(port, '0.0.0.0');
      await once(udpHolder, 'listening');
      cleanup.push(() => new Promise<void>((r) => udpHolder.close(() => r())));
      const n = node({ bindRetry: { baseMs: 50, capMs: 100 } });
      // The holder did not set SO_REUSEPORT: a listener that does cannot share with it either.
      const tcp = listener(1, port, { bindAddresses: [VIP], reusePort });
      const udp = listener(2, port, { bindAddresses: [VIP], protocol: 'udp', reusePort });
      const acked = await n.apply(snapshot(1, [tcp, udp]));
      expect(acked.map((f) => f.reason).sort()).toEqual([
        `cannot bind tcp ${VIP}:${port}: EADDRINUSE`,
        `cannot bind udp ${VIP}:${port}: EADDRINUSE`,
      ]);
      expect(n.currentFailures()).toHaveLength(2);
      expect(await metric(n, 'slb_l4_listeners_bind_failing')).toBe(2);
    },
  );

  it('reports an address that is not on the host as EADDRNOTAVAIL', async () => {
    const n = node({ bindRetry: { baseMs: 50, capMs: 100 } });
    // TEST-NET-1: never a local address.
    const lsn = listener(1, 7001, { bindAddresses: ['192.0.2.1'] });
    expect(await n.apply(snapshot(1, [lsn]))).toEqual([
      { listenerId: lsn.id, reason: 'cannot bind tcp 192.0.2.1:7001: EADDRNOTAVAIL' },
    ]);
  });

  it('stops retrying a listener the config removes, and tries a changed one at once', async () => {
    const port = await freePort(VIP);
    await occupy(VIP, port);
    const n = node({ bindRetry: { baseMs: 50, capMs: 100 } });
    const lsn = listener(1, port, { bindAddresses: [VIP] });
    await n.apply(snapshot(1, [lsn]));
    expect(n.currentFailures()).toHaveLength(1);
    // Moved to a free port: bound by the apply itself, no retry needed.
    const other = await freePort(VIP);
    expect(await n.apply(snapshot(2, [{ ...lsn, port: other }]))).toEqual([]);
    expect(n.currentFailures()).toEqual([]);
    expect(n.listeners.has(lsn.id)).toBe(true);
    // Back to the taken port, then removed: nothing failing, nothing retried any more.
    await n.apply(snapshot(3, [{ ...lsn }]));
    expect(n.currentFailures()).toHaveLength(1);
    await n.apply(snapshot(4, []));
    expect(n.currentFailures()).toEqual([]);
    expect(await metric(n, 'slb_l4_listeners_bind_failing')).toBe(0);
    const retries = await metric(n, 'slb_l4_bind_retries_total');
    await new Promise((r) => setTimeout(r, 300)); // a fixed window on purpose: no retry comes any more
    expect(await metric(n, 'slb_l4_bind_retries_total')).toBe(retries);
  });

  it('a delta that does not touch a failing listener leaves its retry running', async () => {
    const be = await idServer('origin');
    cleanup.push(be.close);
    const port = await freePort(VIP);
    const release = await occupy(VIP, port);
    const n = node({ bindRetry: { baseMs: 50, capMs: 100 } });
    const failing = listener(1, port, { bindAddresses: [VIP], backends: [backend(1, be.port)] });
    const s1 = snapshot(1, [failing]);
    await n.apply(s1);
    const fine = listener(2, await freePort(), { backends: [backend(1, be.port)] });
    const s2 = snapshot(2, [failing, fine]);
    expect(await n.apply(s2, { upsert: [fine], remove: [], l7NodesChanged: false })).toEqual([]);
    expect(n.currentFailures().map((f) => f.listenerId)).toEqual([failing.id]);
    await release();
    await vi.waitUntil(() => n.listeners.has(failing.id), 3000);
    expect(n.currentFailures()).toEqual([]);
    expect(await whoAnswers(fine.port)).toBe('origin');
  });
});
