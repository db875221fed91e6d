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
/** A delta from `current`'s version to the next, with `fields` over an empty one. */
const deltaFrom3 = (fields: object = {}) =>
  ({
    type: 'delta',
    kind: 'l4',
    fromVersion: 3,
    version: 4,
    generatedAt: at,
    upsert: [],
    remove: [],
    ...fields,
  }) as ConfigMessage;
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

describe('the digest a config carries', () => {
  const D1 = '1'.repeat(32);
  const D2 = '2'.repeat(32);
  const delta = (upsert: unknown[], digest?: string) =>
    deltaFrom3({ upsert, ...(digest === undefined ? {} : { digest }) });
  const digestOf = async (base: NodeSnapshot, message: ConfigMessage) => {
    const made = await nextConfig(base, message);
    return made.inStep ? made.next.digest : 'out of step';
  };

  it("is the message's: kept from a snapshot, replaced by a delta's, gone with a delta that has none", async () => {
    const snapshot = {
      type: 'snapshot',
      kind: 'l4',
      snapshot: { version: 4, generatedAt: at, listeners: [listener('a', 80)], l7Nodes: [], digest: D1 },
    } as ConfigMessage;
    expect(await digestOf(current, snapshot)).toBe(D1);
    const held = { ...current, digest: D1 } as NodeSnapshot;
    expect(await digestOf(held, delta([listener('c', 83)], D2))).toBe(D2);
    expect(await digestOf(held, delta([listener('c', 83)]))).toBeUndefined();
  });

  it('is dropped when a listener of the message was refused: the node does not hold what it names', async () => {
    const held = { ...current, digest: D1 } as NodeSnapshot;
    expect(await digestOf(held, delta([unreadable('d')], D2))).toBeUndefined();
  });
});

describe('a delta', () => {
  it('with a new deny set is applied whole: the same listener objects, every one looked at again', async () => {
    const backendDeny = [{ cidr: '10.0.0.0/8' }];
    const made = await nextConfig({ ...current, epoch: 'a'.repeat(32) } as NodeSnapshot, deltaFrom3({ backendDeny }));
    expect(made.inStep).toBe(true);
    if (!made.inStep) return;
    expect(made.change).toBeUndefined();
    expect(made.next).toMatchObject({ version: 4, backendDeny, epoch: 'a'.repeat(32) });
    expect(made.next.listeners[0]).toBe(current.listeners[0]);
  });

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

describe('backend sets (WireNodeSnapshot)', () => {
  const server = (n: number) => ({
    serverId: `srv-${String(n).padStart(20, '0')}`,
    address: `10.0.0.${n}`,
    port: 80,
    weight: 100,
    healthy: true,
  });
  /** A listener as the compact channel sends it: its backends by the name of a set. */
  const naming = (name: string, port: number, set: string) => {
    const { backends: _, ...fields } = listener(name, port);
    return { ...fields, backendSet: set };
  };
  const sets = [
    { id: 's0', backends: [server(1), server(2)] },
    { id: 's1', backends: [{ ...server(3), port: 70_000 }] },
  ];
  /** A first snapshot of these listeners, carrying `sets`. */
  const snapshotOf = (listeners: unknown[]) =>
    ({
      type: 'snapshot',
      kind: 'l4',
      snapshot: { version: 4, generatedAt: at, listeners, l7Nodes: [], backendSets: sets },
    }) as ConfigMessage;

  it('gives each listener its set, one array for all that name it, and fails only those it cannot', async () => {
    const message = snapshotOf([
      naming('a', 80, 's0'),
      naming('b', 81, 's1'),
      naming('c', 82, 's0'),
      naming('d', 83, 's7'),
      { ...naming('e', 84, 's0'), backends: [] },
      listener('f', 85),
    ]);
    const made = await nextConfig(null, message);
    if (!made.inStep) throw new Error('out of step');
    expect(made.next).not.toHaveProperty('backendSets');
    const [a, c, f] = made.next.listeners as NodeSnapshot['listeners'];
    expect(made.next.listeners.map((l) => l.id)).toEqual([id('a'), id('c'), id('f')]);
    expect(a).toEqual({ ...listener('a', 80), backends: [server(1), server(2)] });
    expect(a).not.toHaveProperty('backendSet');
    expect(c!.backends).toBe(a!.backends);
    expect(f).toEqual(listener('f', 85));
    expect(made.refused).toEqual([
      { listenerId: id('b'), reason: expect.stringMatching(/^backendSets\/1\/backends\/0\/port: /) },
      { listenerId: id('d'), reason: 'backendSet: no set s7 in the message' },
      { listenerId: id('e'), reason: 'backendSet: a listener names a set or has backends, not both' },
    ]);
  });

  it('still checks the own fields of a listener whose set was good', async () => {
    const message = snapshotOf([
      { ...naming('a', 80, 's0'), port: 0 },
      { ...naming('b', 81, 's0'), extra: 1 },
      { ...naming('c', 82, 's0'), bindAddresses: ['127.0.0.1', '127.0.0.1'] },
      naming('d', 83, 's0'),
    ]);
    const made = await nextConfig(null, message);
    if (!made.inStep) throw new Error('out of step');
    expect(made.next.listeners.map((l) => l.id)).toEqual([id('d')]);
    expect(made.refused).toEqual([
      { listenerId: id('a'), reason: expect.stringMatching(/^\/port: /) },
      { listenerId: id('b'), reason: expect.stringMatching(/^\/extra: /) },
      { listenerId: id('c'), reason: '/bindAddresses: Expected array elements to be unique' },
    ]);
  });

  it('resolves no set for an L7 node: its listener naming one is refused by the L7 schema', async () => {
    const message = {
      type: 'delta',
      kind: 'l7',
      fromVersion: 3,
      version: 4,
      generatedAt: at,
      upsert: [{ id: id('x'), backendSet: 's0' }],
      remove: [],
    } as unknown as ConfigMessage; // an L7 listener with an L4-only field: not a well-typed message
    const made = await nextConfig(current, message);
    if (!made.inStep) throw new Error('out of step');
    expect(made.refused).toEqual([{ listenerId: id('x'), reason: expect.not.stringContaining('backendSet: no set') }]);
    expect(made.change?.upsert).toEqual([]);
  });

  it('resolves a delta’s upserts against the sets it carries', async () => {
    const message = {
      type: 'delta',
      kind: 'l4',
      fromVersion: 3,
      version: 4,
      generatedAt: at,
      upsert: [naming('c', 83, 's0')],
      remove: [],
      backendSets: sets,
    } as ConfigMessage;
    const made = await nextConfig(current, message);
    if (!made.inStep) throw new Error('out of step');
    expect(made.next.listeners.map((l) => l.id)).toEqual([id('a'), id('b'), id('c')]);
    expect(made.change?.upsert).toEqual([{ ...listener('c', 83), backends: [server(1), server(2)] }]);
    expect(made.refused).toEqual([]);
  });
});
