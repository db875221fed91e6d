import { type Static, Type } from '@sinclair/typebox';
import { IpAddress, Port, ResourceId, StrictObject, Weight } from './common.js';
import { MaxConnections } from './connection-limits.js';
import {
  CidrText,
  MAX_ACL_ENTRIES,
  MAX_CONNECTION_DRAIN_TIMEOUT,
  MAX_IDLE_TIMEOUT,
  MAX_LISTENERS_PER_NODE,
  MAX_PERSISTENCE_TIMEOUT,
  MAX_SERVERS_PER_GROUP,
} from './limits.js';
import { SnapshotBackendDenyList } from './snapshot-deny.js';

// The node config snapshot: what the control plane compiles for one forwarding node and pushes over the
// control channel, and what a node reads from `--config` or its last-known-good file. Everything a node
// needs is resolved in it (addresses, weights, health), so a node never calls back to ask.
// Strict objects everywhere: a node that silently ignored a misspelt field would forward wrongly.
// Enums are unions of literals, not common.ts's StringEnum (Type.Unsafe), because nodes validate with
// Value.Check, which only understands standard TypeBox kinds. The values are the listener resource's.

export const SnapshotProtocol = Type.Union([
  Type.Literal('tcp'),
  Type.Literal('udp'),
  Type.Literal('http'),
  Type.Literal('https'),
]);
export const SnapshotScheduler = Type.Union([
  Type.Literal('wrr'),
  Type.Literal('wlc'),
  Type.Literal('rr'),
  Type.Literal('sch'),
  Type.Literal('tch'),
]);
export const SnapshotProxyProtocol = Type.Union([Type.Literal('off'), Type.Literal('v1'), Type.Literal('v2')], {
  description: 'PROXY protocol header toward backends',
});

/** IPv4 or IPv6 CIDR (or a bare address, meaning a single host); the node checks it parses. */
export const SnapshotCidr = CidrText('IPv4 or IPv6 CIDR, e.g. 10.0.0.0/8');

export const SnapshotAcl = StrictObject(
  {
    mode: Type.Union([Type.Literal('allow'), Type.Literal('deny')], {
      description: 'allow: only these sources; deny: all but these',
    }),
    cidrs: Type.Array(SnapshotCidr, { maxItems: MAX_ACL_ENTRIES }),
  },
  { title: 'SnapshotAcl' },
);
export type SnapshotAcl = Static<typeof SnapshotAcl>;

/** The fields of one backend as both node kinds receive it; `unit` is what an unhealthy server stops taking. */
export function backendFields(unit: 'flows' | 'requests') {
  return {
    serverId: ResourceId('server'),
    address: IpAddress,
    port: Port,
    weight: Weight,
    healthy: Type.Boolean({ description: `latest health-check verdict; unhealthy servers take no new ${unit}` }),
  };
}

export const SnapshotBackend = StrictObject(backendFields('flows'), { title: 'SnapshotBackend' });
export type SnapshotBackend = Static<typeof SnapshotBackend>;

export const SnapshotListener = StrictObject(
  {
    id: ResourceId('listener'),
    loadBalancerId: ResourceId('loadBalancer'),
    tenantId: ResourceId('tenant'),
    protocol: SnapshotProtocol,
    port: Port,
    bindAddresses: Type.Array(IpAddress, {
      minItems: 1,
      maxItems: 16,
      uniqueItems: true,
      description: "addresses the listener serves on: the load balancer's VIP (or, before VIPs, the node's own)",
    }),
    // Optional: configs and last-known-good files from before VIPs bind exclusively, as they did.
    reusePort: Type.Optional(
      Type.Boolean({
        description: 'share this address:port with peer nodes on the host (SO_REUSEPORT); active-active',
      }),
    ),
    scheduler: SnapshotScheduler,
    persistenceTimeout: Type.Integer({ minimum: 0, maximum: MAX_PERSISTENCE_TIMEOUT, description: 'seconds; 0 = off' }),
    proxyProtocol: SnapshotProxyProtocol,
    connectionDrainTimeout: Type.Integer({
      minimum: 0,
      maximum: MAX_CONNECTION_DRAIN_TIMEOUT,
      description: 'seconds a removed or weight-0 server keeps its connections; 0 closes them at once',
    }),
    idleTimeout: Type.Integer({
      minimum: 1,
      maximum: MAX_IDLE_TIMEOUT,
      description: 'seconds; also the UDP flow timeout',
    }),
    connectTimeout: Type.Optional(
      Type.Number({
        minimum: 0.05,
        maximum: 60,
        description: 'seconds before a backend connect attempt is given up and retried elsewhere; default 2',
      }),
    ),
    maxConnectAttempts: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 16, description: 'backends tried per client connection; default 3' }),
    ),
    acl: Type.Optional(SnapshotAcl),
    // Optional so a last-known-good snapshot written before the field existed still loads.
    maxConnections: Type.Optional(MaxConnections),
    l7Port: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 65535,
        description: 'http/https: the port the L7 nodes serve this listener on (PROXY v2); default the l7Nodes port',
      }),
    ),
    sessionSync: Type.Boolean({ description: 'publish conntrack/persistence entries to peer nodes' }),
    backends: Type.Array(SnapshotBackend, { maxItems: MAX_SERVERS_PER_GROUP }),
  },
  { title: 'SnapshotListener' },
);
export type SnapshotListener = Static<typeof SnapshotListener>;

/**
 * The channel's compact form of an L4 listener: its backends by reference to a set of the same message.
 * The listeners of one server group carry the same backends, and a fleet's snapshot spelled them out per
 * listener: 40-55 MB for 10,000 listeners, most of it the same servers again, which a joining node had to
 * receive, parse and hold. A node resolves every reference before it checks or applies a listener, so what
 * it applies, saves and reports is always the plain SnapshotListener.
 */
export const SnapshotListenerRef = StrictObject(
  {
    ...Type.Omit(SnapshotListener, ['backends']).properties,
    backendSet: Type.String({ minLength: 1, maxLength: 64, description: 'the id of a set in backendSets' }),
  },
  { title: 'SnapshotListenerRef' },
);
export type SnapshotListenerRef = Static<typeof SnapshotListenerRef>;

/** Backends that several listeners of one message share (see SnapshotListenerRef). */
export const SnapshotBackendSet = StrictObject(
  {
    id: Type.String({ minLength: 1, maxLength: 64 }),
    backends: Type.Array(SnapshotBackend, { maxItems: MAX_SERVERS_PER_GROUP }),
  },
  { title: 'SnapshotBackendSet' },
);
export type SnapshotBackendSet = Static<typeof SnapshotBackendSet>;

export const SnapshotBackendSets = Type.Array(SnapshotBackendSet, {
  maxItems: MAX_LISTENERS_PER_NODE,
  description: 'backends shared by listeners of this message, which name a set by its id (backendSet)',
});

/** A listener as the channel carries it to an L4 node: spelt out, or with its backends by reference. */
export const SnapshotWireListener = Type.Union([SnapshotListener, SnapshotListenerRef]);

export const SnapshotL7Node = StrictObject(
  {
    nodeId: Type.String({ minLength: 1, maxLength: 64 }),
    address: IpAddress,
    port: Port,
    healthy: Type.Boolean(),
  },
  { title: 'SnapshotL7Node' },
);
export type SnapshotL7Node = Static<typeof SnapshotL7Node>;

/**
 * The controller process that numbered a config, in the first snapshot of a session to a node that keeps it
 * (`appliedEpoch` in its hello). With the version, it names what a reconnecting node holds: the same process,
 * seeing its own epoch and the version it sent last, answers with a delta instead of the whole config.
 */
export const SnapshotEpoch = Type.String({
  pattern: '^[0-9a-f]{32}$',
  description: 'the numbering controller process (random, 128 bits, hex); kept through deltas',
});

/**
 * What a node holds, hashed by the controller that sent it (each listener as compiled, the deny set, the L7
 * pool or the L4 nodes), in each config to a node that keeps epochs. Any controller process computes the
 * same digest from the same fleet: one that finds a reconnecting node's digest equal to what it would send
 * it answers with an empty delta instead of the whole config (after its own restart, or on another replica).
 */
export const SnapshotDigest = Type.String({
  pattern: '^[0-9a-f]{32}$',
  description: "the controller's hash of this config (hex); kept until the next config, dropped when one was refused",
});

/** The deployment's session-sync key prefix, in both nodes' snapshots. */
export const SnapshotSessionSyncPrefix = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: '^\\S+$',
  description:
    "the deployment's session-sync key prefix (from its cluster id), unless the node's own " +
    'SLB_SESSION_SYNC_PREFIX is set; absent: slb:sync',
});

export const NodeSnapshot = StrictObject(
  {
    version: Type.Integer({ minimum: 0, description: 'increases with every change; nodes ack it' }),
    generatedAt: Type.String({
      // A pattern rather than `format: date-time`, so Value.Check works without a format registry.
      pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$',
      description: 'RFC 3339 timestamp',
    }),
    listeners: Type.Array(SnapshotListener, { maxItems: MAX_LISTENERS_PER_NODE }),
    l7Nodes: Type.Array(SnapshotL7Node, {
      maxItems: 1000,
      description: 'the L7 pool http/https listeners are spread across (PROXY v2)',
    }),
    backendDeny: Type.Optional(SnapshotBackendDenyList),
    sessionSyncPrefix: Type.Optional(SnapshotSessionSyncPrefix),
    epoch: Type.Optional(SnapshotEpoch),
    digest: Type.Optional(SnapshotDigest),
  },
  { title: 'NodeSnapshot' },
);
export type NodeSnapshot = Static<typeof NodeSnapshot>;

/**
 * An L4 snapshot as the channel or a saved file may carry it: listeners may name a backend set instead of
 * spelling out their backends (only to a node that said it reads them, `backendSets` in its hello).
 */
export const WireNodeSnapshot = StrictObject(
  {
    ...NodeSnapshot.properties,
    listeners: Type.Array(SnapshotWireListener, { maxItems: MAX_LISTENERS_PER_NODE }),
    backendSets: Type.Optional(SnapshotBackendSets),
  },
  { title: 'WireNodeSnapshot' },
);
