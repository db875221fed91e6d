import { L4Node } from '@slb/l4-node/app';
import { L4Metrics } from '@slb/l4-node/metrics';
import type { NodeSnapshot } from '@slb/model';
import { pino } from 'pino';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { createL7App } from '../src/app.js';
import { id, listener, refusedPort, snapshot, startApp, startBackend } from './helpers.js';

// The full path: client → L4 node (HTTP listener, PROXY v2 toward the L7 pool) → L7 node → backend. The
// backend sees the client's address, and the L7 node reports the frontend port the client dialled.

describe('L4 → L7 → backend', () => {
  it('preserves the client address end to end', async () => {
    const be = await startBackend('origin');
    const l7 = await startApp(listener({ backends: [be.spec] }));
    const l4Port = await refusedPort();
    const l4 = new L4Node({ logger: pino({ level: 'silent' }), metrics: new L4Metrics({ defaultMetrics: false }) });
    const snap: NodeSnapshot = {
      version: 1,
      generatedAt: '2026-11-30T00:00:00Z',
      l7Nodes: [{ nodeId: 'node-l7-a', address: '127.0.0.1', port: l7.proxy, healthy: true }],
      listeners: [
        {
          id: id('lsn'),
          loadBalancerId: id('lb'),
          tenantId: id('tnt'),
          protocol: 'http',
          port: l4Port,
          bindAddresses: ['127.0.0.1'],
          scheduler: 'wrr',
          persistenceTimeout: 0,
          proxyProtocol: 'off',
          connectionDrainTimeout: 0,
          idleTimeout: 60,
          sessionSync: false,
          backends: [],
        },
      ],
    };
    await l4.apply(snap);
    for (let i = 0; i < 3; i++) {
      const res = await request(`http://127.0.0.1:${l4Port}/via-l4`, { headers: { 'x-forwarded-for': '192.0.2.1' } });
      expect(res.statusCode).toBe(200);
      const body = (await res.body.json()) as { backend: string; headers: Record<string, string> };
      expect(body.backend).toBe('origin');
      expect(body.headers['x-real-ip']).toBe('127.0.0.1');
      // The listener replaces (its default) the client's own X-Forwarded-For.
      expect(body.headers['x-forwarded-for']).toBe('127.0.0.1');
      expect(body.headers['x-forwarded-port']).toBe(String(l4Port));
    }
    // The L7 node saw PROXY headers, not the L4 node's own connection as the client.
    const headerErrors = (await l7.app.metrics.proxyHeaderErrors.get()).values.length;
    expect(headerErrors).toBe(0);
    await l4.close();
    await l7.app.close();
    await be.close();
  });
  it('connects to the L7 nodes from the L4 node address, the only peer the L7 node takes PROXY headers from', async () => {
    const L4_ADDRESS = '127.0.0.13';
    // The LB's VIP, which the L4 listener binds: not a node address, so never the source toward L7.
    const VIP = '127.1.0.13';
    const be = await startBackend('origin');
    const lsn = listener({ backends: [be.spec] });
    const l7 = createL7App({ drainMs: 200 });
    await l7.apply({ ...snapshot([lsn]), l4Nodes: [L4_ADDRESS] });
    const l7Port = l7.ports(lsn.id)!.proxy;
    const l4Port = await refusedPort();
    const l4 = new L4Node({
      logger: pino({ level: 'silent' }),
      metrics: new L4Metrics({ defaultMetrics: false }),
      sourceAddress: L4_ADDRESS,
    });
    await l4.apply({
      version: 1,
      generatedAt: '2026-11-30T00:00:00Z',
      l7Nodes: [{ nodeId: 'node-l7-a', address: '127.0.0.1', port: l7Port, healthy: true }],
      listeners: [
        {
          id: id('lsn'),
          loadBalancerId: id('lb'),
          tenantId: id('tnt'),
          protocol: 'http',
          port: l4Port,
          bindAddresses: [VIP],
          scheduler: 'wrr',
          persistenceTimeout: 0,
          proxyProtocol: 'off',
          connectionDrainTimeout: 0,
          idleTimeout: 60,
          sessionSync: false,
          backends: [],
        },
      ],
    });
    try {
      const res = await request(`http://${VIP}:${l4Port}/via-l4`);
      expect(res.statusCode).toBe(200);
      const body = (await res.body.json()) as { headers: Record<string, string> };
      // The client as the L4 node saw it (the kernel picks 127.0.0.1 toward the VIP).
      expect(body.headers['x-forwarded-for']).toBe('127.0.0.1');
      expect((await l7.metrics.untrustedPeers.get()).values.length).toBe(0);
    } finally {
      await l4.close();
      await l7.close();
      await be.close();
    }
  });
});
