import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import {
  CONTROL_CHANNEL_MAX_BYTES,
  ControllerMessage,
  NODE_MESSAGE_MAX_BYTES,
  NodeMessage,
  REPORT_MAX_BYTES,
} from './channel.js';
import { MAX_LISTENERS_PER_NODE } from './limits.js';
import { SnapshotListener } from './snapshot.js';

// A listener as the API compiles it for an L4 node, with realistic ids, addresses and numbers.
const id = (prefix: string, n: number) => `${prefix}-01m8nqqgthpcv2${String(n).padStart(6, '0')}`;
const listener = (servers: number) => ({
  id: id('lsn', 1),
  loadBalancerId: id('lb', 1),
  tenantId: id('tnt', 1),
  protocol: 'tcp',
  port: 19999,
  scheduler: 'wrr',
  persistenceTimeout: 0,
  proxyProtocol: 'off',
  connectionDrainTimeout: 300,
  idleTimeout: 900,
  sessionSync: true,
  backends: Array.from({ length: servers }, (_, s) => ({
    serverId: id('srv', s),
    address: `127.0.0.${100 + s}`,
    port: 40999,
    weight: 100,
    healthy: true,
  })),
  bindAddresses: ['127.77.0.11'],
});

describe('control channel message limit', () => {
  it("carries a full L4 snapshot of issue #9's fleet: 10,000 listeners of 100 servers each", () => {
    const one = listener(100);
    expect(Value.Check(SnapshotListener, one)).toBe(true);
    const head = {
      type: 'snapshot',
      kind: 'l4',
      snapshot: { version: 1_796_027_080_532, generatedAt: new Date().toISOString(), listeners: [one], l7Nodes: [] },
    };
    expect(Value.Check(ControllerMessage, head)).toBe(true);
    // The message with one listener, plus 9,999 more of the same size and their commas.
    const bytes = JSON.stringify(head).length + 9_999 * (JSON.stringify(one).length + 1);
    expect(bytes).toBeGreaterThan(64 * 1024 * 1024); // what the limit was: the bench's nodes never got their config
    expect(bytes).toBeLessThan(CONTROL_CHANNEL_MAX_BYTES);
  });
});

describe('backend sets on the channel (WireNodeSnapshot)', () => {
  const { backends, ...fields } = listener(3);
  const snapshot = (listeners: unknown[], backendSets?: unknown) => ({
    type: 'snapshot',
    kind: 'l4',
    snapshot: {
      version: 1,
      generatedAt: new Date().toISOString(),
      listeners,
      l7Nodes: [],
      ...(backendSets === undefined ? {} : { backendSets }),
    },
  });

  it('carries listeners naming a set beside listeners spelling theirs out, in snapshots and deltas', () => {
    const sets = [{ id: 's0', backends }];
    expect(Value.Check(ControllerMessage, snapshot([{ ...fields, backendSet: 's0' }, listener(1)], sets))).toBe(true);
    const delta = { type: 'delta', kind: 'l4', fromVersion: 1, version: 2, generatedAt: 'now', remove: [] };
    expect(
      Value.Check(ControllerMessage, { ...delta, upsert: [{ ...fields, backendSet: 's0' }], backendSets: sets }),
    ).toBe(true);
  });

  it('refuses a listener with both a set and backends, and a plain snapshot listener naming a set', () => {
    expect(Value.Check(ControllerMessage, snapshot([{ ...fields, backends, backendSet: 's0' }], []))).toBe(false);
    expect(Value.Check(SnapshotListener, { ...fields, backendSet: 's0' })).toBe(false);
  });
});

describe('node message limit', () => {
  it('takes the largest hello a node can send: every VIP it may serve, each as long as an address can be', () => {
    const hello = {
      type: 'hello',
      nodeId: 'n'.repeat(64),
      kind: 'l4',
      address: 'a'.repeat(45),
      capacity: 1000,
      appliedVersion: Number.MAX_SAFE_INTEGER,
      reusePort: true,
      boundVips: Array.from(
        { length: MAX_LISTENERS_PER_NODE },
        (_, i) => `${'f'.repeat(40)}:${String(i).padStart(4, '0')}`,
      ),
    };
    expect(Value.Check(NodeMessage, hello)).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(hello))).toBeLessThanOrEqual(NODE_MESSAGE_MAX_BYTES);
    expect(REPORT_MAX_BYTES).toBeLessThan(NODE_MESSAGE_MAX_BYTES);
  });
});

describe('VIP fields (issue 19), all optional so older nodes and hubs still talk', () => {
  const load = { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 };
  const hello = {
    type: 'hello',
    nodeId: 'l4-a',
    kind: 'l4',
    address: '127.0.0.11',
    capacity: 100,
    appliedVersion: 3,
  };

  it('a hello may say whether the node can share a VIP:port', () => {
    expect(Value.Check(NodeMessage, hello)).toBe(true);
    expect(Value.Check(NodeMessage, { ...hello, reusePort: true })).toBe(true);
    expect(Value.Check(NodeMessage, { ...hello, reusePort: false })).toBe(true);
    expect(Value.Check(NodeMessage, { ...hello, reusePort: 'yes' })).toBe(false);
  });

  it("a heartbeat may carry the node's current listener failures, bounded like an ack's", () => {
    const failure = { listenerId: id('lsn', 1), reason: 'cannot bind tcp 127.1.0.5:7001: EADDRINUSE' };
    expect(Value.Check(NodeMessage, { type: 'heartbeat', load })).toBe(true);
    expect(Value.Check(NodeMessage, { type: 'heartbeat', load, failedListeners: [] })).toBe(true);
    expect(Value.Check(NodeMessage, { type: 'heartbeat', load, failedListeners: [failure] })).toBe(true);
    expect(Value.Check(NodeMessage, { type: 'heartbeat', load, failedListeners: [{ listenerId: 'x' }] })).toBe(false);
    const tooMany = Array.from({ length: MAX_LISTENERS_PER_NODE + 1 }, () => failure);
    expect(Value.Check(NodeMessage, { type: 'heartbeat', load, failedListeners: tooMany })).toBe(false);
    expect(Value.Check(NodeMessage, { type: 'ack', version: 1, failedListeners: tooMany })).toBe(false);
  });

  it('a listener may ask to share its address:port with peer nodes', () => {
    expect(Value.Check(SnapshotListener, { ...listener(1), reusePort: true })).toBe(true);
    expect(Value.Check(SnapshotListener, { ...listener(1), reusePort: 1 })).toBe(false);
  });
});
