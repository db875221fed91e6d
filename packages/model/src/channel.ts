import { type Static, Type } from '@sinclair/typebox';
import { NodeId } from './common.js';
import { L7Listener, L7NodeSnapshot } from './l7-snapshot.js';
import { MAX_LISTENERS_PER_NODE } from './limits.js';
import {
  SnapshotBackendSets,
  SnapshotDigest,
  SnapshotEpoch,
  SnapshotL7Node,
  SnapshotWireListener,
  WireNodeSnapshot,
} from './snapshot.js';
import { SnapshotBackendDenyList } from './snapshot-deny.js';
import { MAX_TRAFFIC_LISTENERS_PER_BEAT, RESPONSE_CLASSES, UPSTREAM_TIME_BOUNDS_MS } from './traffic.js';

// The control channel: one WebSocket per node, the node dials out (SoftEther's members to their
// controller). Every message is a JSON object with a `type`, validated with Value.Check on both sides;
// an invalid one is answered with an `error` and changes nothing.

// Bounded where a number still counts by ones: a hello past it would freeze the controller's next version.
const Version = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const Load = Type.Object(
  {
    activeConnections: Type.Integer({ minimum: 0 }),
    newConnectionsPerSecond: Type.Number({ minimum: 0 }),
    requestsPerSecond: Type.Number({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export type NodeLoadReport = Static<typeof Load>;

export const HelloMessage = Type.Object(
  {
    type: Type.Literal('hello'),
    nodeId: NodeId,
    kind: Type.Union([Type.Literal('l4'), Type.Literal('l7')]),
    address: Type.String({ minLength: 2, maxLength: 45 }),
    capacity: Type.Integer({ minimum: 0, maximum: 1000, description: '100 = a normal node' }),
    appliedVersion: Version,
    // Optional: nodes from before VIPs say nothing, and the hub treats silence as "cannot share".
    reusePort: Type.Optional(
      Type.Boolean({
        description:
          'this node can share a VIP:port with peer nodes on its host (SO_REUSEPORT); without it the hub sends a VIP to one node at a time',
      }),
    ),
    backendSets: Type.Optional(
      Type.Boolean({
        description:
          'this node reads L4 listeners that name a backend set of the same message (SnapshotListenerRef); without it the hub spells every listener out',
      }),
    ),
    appliedEpoch: Type.Optional(
      Type.Union([SnapshotEpoch, Type.Literal('')], {
        description:
          "the epoch of the config at appliedVersion ('' for none): said by a node that keeps the epoch its snapshots carry, so a controller that numbered that version itself can send only what changed since",
      }),
    ),
    appliedDigest: Type.Optional(
      Type.Union([SnapshotDigest, Type.Literal('')], {
        description:
          "the digest of the config at appliedVersion ('' for none): a controller that would send this node exactly that config answers with an empty delta",
      }),
    ),
    denyDeltas: Type.Optional(
      Type.Boolean({
        description:
          'this node takes a changed backend deny set in a delta (and checks every listener again); without it the hub sends it a whole snapshot',
      }),
    ),
    rotatesFailures: Type.Optional(
      Type.Boolean({
        description:
          'when its failing listeners do not fit in one ack or heartbeat, each names the ones after the last it named (in id order, from the first again at the end), so a few reports name them all; without it the same ones are named every time',
      }),
    ),
    boundVips: Type.Optional(
      Type.Array(Type.String({ minLength: 2, maxLength: 45 }), {
        maxItems: MAX_LISTENERS_PER_NODE,
        description:
          'the addresses this node serves listeners on right now: a restarted controller leaves each VIP where it is',
      }),
    ),
  },
  { additionalProperties: false },
);
/** A listener a node could not build from the config it acked; it kept that listener's last good config, if any. */
export const ListenerFailure = Type.Object(
  {
    listenerId: Type.String({ minLength: 1, maxLength: 64 }),
    reason: Type.String({ maxLength: 500 }),
  },
  { additionalProperties: false },
);
export type ListenerFailure = Static<typeof ListenerFailure>;
/** Bounded like the message that carries it: at most one entry per listener a node can hold. */
const FailedListeners = (description: string) =>
  Type.Array(ListenerFailure, { maxItems: MAX_LISTENERS_PER_NODE, description });

/**
 * Longest message a node may send the controller, bytes: the controller closes a channel that sends more.
 * The largest a node sends is its hello naming every VIP it serves (up to MAX_LISTENERS_PER_NODE of them,
 * ~480 KB in IPv6 at worst); it was 64 KiB, which a node serving 4,000 IPv4 VIPs already passed, and then
 * it could never connect.
 */
export const NODE_MESSAGE_MAX_BYTES = 512 * 1024;

/** Bytes of an ack or heartbeat at most: sent every second, they stay small whatever the node holds. */
export const REPORT_MAX_BYTES = 64 * 1024;

/**
 * Bytes of `failedListeners` entries in one ack or heartbeat at most. A heartbeat also carries up to
 * MAX_TRAFFIC_LISTENERS_PER_BEAT traffic entries (at most TRAFFIC_REPORT_MAX_BYTES), and the whole stays
 * within REPORT_MAX_BYTES: a node with a thousand failing listeners (a VIP:port another process holds) sent
 * heartbeats past the controller's limit, and the controller closed its channel every second.
 */
export const FAILED_LISTENERS_MAX_BYTES = 12 * 1024;

/**
 * Bytes of traffic entries in one heartbeat at most; those left out go in the next beats (counters are
 * cumulative). What is left of REPORT_MAX_BYTES after the failures and 4 KiB for the rest (load, boot id,
 * applying): 150 entries with counters in the trillions would not fit otherwise.
 */
export const TRAFFIC_REPORT_MAX_BYTES = REPORT_MAX_BYTES - FAILED_LISTENERS_MAX_BYTES - 4 * 1024;

/** How many failing listeners a message left unnamed (it had no room for them); absent: none. */
const FailedListenersOmitted = Type.Optional(
  Type.Integer({
    minimum: 1,
    maximum: MAX_LISTENERS_PER_NODE,
    description: 'failing listeners not named in failedListeners: the message had no room for them',
  }),
);
export const AckMessage = Type.Object(
  {
    type: Type.Literal('ack'),
    version: Version,
    failedListeners: Type.Optional(
      FailedListeners('every listener of the applied config the node does not serve as sent; the rest are applied'),
    ),
    failedListenersOmitted: FailedListenersOmitted,
  },
  { additionalProperties: false },
);
export const NackMessage = Type.Object(
  { type: Type.Literal('nack'), version: Version, reason: Type.String({ maxLength: 2000 }) },
  { additionalProperties: false },
);
const Count = (description?: string) =>
  Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, ...(description === undefined ? {} : { description }) });
/**
 * One listener's traffic on a node: counters cumulative since the node process started (its `bootId`), and
 * the open connections now. Only the counters the node serves: `responses` and `upstreamMs` on http/https
 * listeners (the L7 nodes; L4 nodes report only the tcp/udp listeners they terminate).
 */
export const ListenerTrafficReport = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 64 }),
    conns: Count('connections accepted (tcp, http, https) or flows opened (udp)'),
    bytesIn: Count('client → backend bytes'),
    bytesOut: Count('backend → client bytes'),
    drops: Count('connections or flows refused (ACL, limits, no backend)'),
    active: Count('open connections or flows now (a gauge)'),
    responses: Type.Optional(
      Type.Array(Count(), {
        minItems: RESPONSE_CLASSES.length,
        maxItems: RESPONSE_CLASSES.length,
        description: 'responses by class, RESPONSE_CLASSES order (2xx … 5xx, the node’s own 502/503/504 included)',
      }),
    ),
    upstreamMs: Type.Optional(
      Type.Array(Count(), {
        minItems: UPSTREAM_TIME_BOUNDS_MS.length + 1,
        maxItems: UPSTREAM_TIME_BOUNDS_MS.length + 1,
        description:
          'backend response times per UPSTREAM_TIME_BOUNDS_MS bucket (not cumulative over buckets), the last one slower than every bound',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ListenerTrafficReport = Static<typeof ListenerTrafficReport>;
export const TrafficReport = Type.Object(
  {
    bootId: Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'new at every start of the node process: counters under another boot id started again from 0',
    }),
    listeners: Type.Array(ListenerTrafficReport, { maxItems: MAX_TRAFFIC_LISTENERS_PER_BEAT }),
  },
  { additionalProperties: false },
);
export type TrafficReport = Static<typeof TrafficReport>;

export const HeartbeatMessage = Type.Object(
  {
    type: Type.Literal('heartbeat'),
    load: Load,
    // In every heartbeat, not only in acks: a bind that fails (a port taken by another process) is retried
    // and may heal, or break, between two configs; the ack alone would leave the hub's view stale.
    failedListeners: Type.Optional(
      FailedListeners(
        "the node's listener failures now (binds still being retried included); absent or empty: every listener of the applied config is served",
      ),
    ),
    failedListenersOmitted: FailedListenersOmitted,
    // Optional: nodes from before traffic metrics say nothing, and their listeners simply have no data.
    traffic: Type.Optional(TrafficReport),
    // A node applying a fleet-sized config may go quiet for a moment it cannot cut up (parsing the message):
    // it says so first, and the controller waits longer before it calls it offline (bounded).
    applying: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'the version of the config the node is applying now; absent: none',
      }),
    ),
  },
  { additionalProperties: false },
);
export const NodeMessage = Type.Union([HelloMessage, AckMessage, NackMessage, HeartbeatMessage]);
export type NodeMessage = Static<typeof NodeMessage>;
export type HelloMessage = Static<typeof HelloMessage>;
export type HeartbeatMessage = Static<typeof HeartbeatMessage>;

export const L4SnapshotMessage = Type.Object(
  { type: Type.Literal('snapshot'), kind: Type.Literal('l4'), snapshot: WireNodeSnapshot },
  { additionalProperties: false },
);
export const L7SnapshotMessage = Type.Object(
  { type: Type.Literal('snapshot'), kind: Type.Literal('l7'), snapshot: L7NodeSnapshot },
  { additionalProperties: false },
);
/** Only the listeners that changed since `fromVersion`; a node on another version asks for a snapshot by reconnecting. */
export const L4DeltaMessage = Type.Object(
  {
    type: Type.Literal('delta'),
    kind: Type.Literal('l4'),
    fromVersion: Version,
    version: Version,
    generatedAt: Type.String(),
    upsert: Type.Array(SnapshotWireListener),
    remove: Type.Array(Type.String({ maxLength: 64 })),
    l7Nodes: Type.Optional(Type.Array(SnapshotL7Node)),
    backendSets: Type.Optional(SnapshotBackendSets),
    // The whole new deny set, only when it changed and only to a node that said `denyDeltas`.
    backendDeny: Type.Optional(SnapshotBackendDenyList),
    // The digest of the config this delta makes (to a node that keeps epochs).
    digest: Type.Optional(SnapshotDigest),
  },
  { additionalProperties: false },
);
export const L7DeltaMessage = Type.Object(
  {
    type: Type.Literal('delta'),
    kind: Type.Literal('l7'),
    fromVersion: Version,
    version: Version,
    generatedAt: Type.String(),
    upsert: Type.Array(L7Listener),
    remove: Type.Array(Type.String({ maxLength: 64 })),
    // The whole new deny set, only when it changed and only to a node that said `denyDeltas`.
    backendDeny: Type.Optional(SnapshotBackendDenyList),
    // The digest of the config this delta makes (to a node that keeps epochs).
    digest: Type.Optional(SnapshotDigest),
  },
  { additionalProperties: false },
);
export const ErrorMessage = Type.Object(
  { type: Type.Literal('error'), reason: Type.String() },
  { additionalProperties: false },
);
/**
 * A node that joined with the legacy shared token is enrolled on the spot and sent its own credential, to
 * keep in its state dir and present from then on (so the shared token can be retired).
 */
export const CredentialMessage = Type.Object(
  { type: Type.Literal('credential'), nodeId: NodeId, credential: Type.String({ minLength: 32, maxLength: 200 }) },
  { additionalProperties: false },
);
export type CredentialMessage = Static<typeof CredentialMessage>;

/** What a node gets for its join token at ENROLL_PATH: who it is, and the credential to dial with. */
export const EnrollResponse = Type.Object(
  {
    nodeId: NodeId,
    kind: Type.Union([Type.Literal('l4'), Type.Literal('l7')]),
    address: Type.String({ minLength: 2, maxLength: 45 }),
    credential: Type.String({ minLength: 32, maxLength: 200 }),
  },
  { additionalProperties: false },
);
export type EnrollResponse = Static<typeof EnrollResponse>;

export const ControllerMessage = Type.Union([
  CredentialMessage,
  L4SnapshotMessage,
  L7SnapshotMessage,
  L4DeltaMessage,
  L7DeltaMessage,
  ErrorMessage,
]);
export type ControllerMessage = Static<typeof ControllerMessage>;
export type L4DeltaMessage = Static<typeof L4DeltaMessage>;
export type L7DeltaMessage = Static<typeof L7DeltaMessage>;

/** The WebSocket path nodes dial, with `Authorization: Bearer <the node's credential>`. */
export const CONTROL_CHANNEL_PATH = '/control/v1/channel';
/** Where a node POSTs its join token (`Authorization: Bearer <join token>`) for its credential. */
export const ENROLL_PATH = '/control/v1/enroll';
/**
 * A message larger than this is refused. A full L4 snapshot of 10,000 listeners with 100 servers each is
 * ~76 MB (issue #9's fleet with one server group per LB), past the 64 MiB this used to be; the ceiling is
 * V8's longest string (~512 MiB), which JSON.stringify of the message cannot exceed anyway.
 */
export const CONTROL_CHANNEL_MAX_BYTES = 256 * 1024 * 1024;
export const HEARTBEAT_INTERVAL_MS = 1000;
/**
 * Longest silence the controller allows a node whose last heartbeat said it was applying a config, before
 * it is offline: a node that hangs or dies mid-apply still goes offline, later than a quiet one does.
 */
export const APPLYING_SILENCE_MAX_MS = 20_000;
