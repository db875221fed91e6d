import type { NodeSnapshot } from '@slb/model';
import { describe, expect, it } from 'vitest';
import { type ConfigMessage, nextConfig } from './next-config.js';

const listener = (name: string, port: number): NodeSnapshot['listeners'][number] => ({
  id: id(name),
  loadBalancerId: 'lb-00000000000000000001',
  tenantId: 'tnt-00000000000000000001',
  protocol: 'tcp',
  port,
  bindAddresses: ['127.0.0.1'],
  scheduler: 'wrr',
  persistenceTimeout: 0,
  proxyProtocol: 'off',
  connectionDrainTimeout: 0,
  idleTimeout: 60,
  sessionSync: false,
  backends: [],
});
/** A listener id from a one-letter name. */
const id = (name: string) => `lsn-${name.padStart(20, '0')}`;
const at = '2026-12-01T00:00:00.000Z';
const current: NodeSnapshot = {
  version: 3,
  generatedAt: at,
  listeners: [listener('a', 80), listener('b', 81)],
  l7Nodes: [],
};
/** A listener whose config the node cannot read (a port out of range). */
const unreadable = (id: string) => ({ ...listener(id, 82), port: 70_000 });

describe('a full snapshot', () => {
  it('replaces the config, an unreadable listener keeping what it had here', async () => {
    const message = {
      type: 'snapshot',
      kind: 'l4',
      snapshot: { version: 4, generatedAt: at, listeners: [unreadable('b'), listener('c', 83)], l7Nodes: [] },
    } as ConfigMessage;
    const made = await nextConfig(current, message);
    expect(made.inStep).toBe(true);
    if (!made.inStep) return;
    expect(made.change).toBeUndefined();
    expect(made.next.version).toBe(4);
    expect(made.next.listeners).toEqual([listener('b', 81), listener('c', 83)]);
    expect(made.refused).toEqual([{ listenerId: id('b'), reason: expect.stringContaining('/port') }]);
  });
});

describe('a delta', () => {
  it('applies to the config it was made from, naming what it touched', async () => {
    const message = {
      type: 'delta',
      kind: 'l4',
      fromVersion: 3,
      version: 4,
      generatedAt: at,
      upsert: [listener('c', 83), unreadable('d')],
      remove: [id('a')],
    } as ConfigMessage;
    const made = await nextConfig(current, message);
    expect(made.inStep).toBe(true);
    if (!made.inStep) return;
    expect(made.next.listeners.map((l) => l.id)).toEqual([id('b'), id('c')]);
    expect(made.change).toEqual({ upsert: [listener('c', 83)], remove: [id('a')], l7NodesChanged: false });
    expect(made.refused.map((f) => f.listenerId)).toEqual([id('d')]);
    // The base is kept as it was: a delta never mutates the applied config.
    expect(current.listeners.map((l) => l.id)).toEqual([id('a'), id('b')]);
  });

  it('is out of step from another version, or with nothing applied', async () => {
    const message = {
      type: 'delta',
      kind: 'l4',
      fromVersion: 2,
      version: 4,
      generatedAt: at,
      upsert: [],
      remove: [],
    } as ConfigMessage;
    expect(await nextConfig(current, message)).toEqual({ inStep: false });
    expect(await nextConfig(null, message)).toEqual({ inStep: false });
  });
});
