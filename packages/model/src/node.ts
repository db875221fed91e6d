import { type Static, Type } from '@sinclair/typebox';
import { Name, NodeId, Nullable, Page, StringEnum, Timestamps } from './common.js';

// The admin's to set, never the node's to claim.
const Capacity = Type.Integer({
  minimum: 0,
  maximum: 1000,
  description: '100 = normal; placement points scale with it',
});

export const NodeKind = StringEnum(['l4', 'l7']);
export const NodeLoad = Type.Object({
  activeConnections: Type.Integer(),
  newConnectionsPerSecond: Type.Number(),
  requestsPerSecond: Type.Number(),
});

export const Node = Type.Object(
  {
    id: NodeId,
    name: Nullable(Type.String({ description: 'the human name given at registration' })),
    kind: NodeKind,
    address: Type.String(),
    status: StringEnum(['online', 'offline']),
    capacityWeight: Type.Integer(),
    drain: Type.Boolean(),
    appliedConfigVersion: Type.Integer(),
    lastHeartbeatAt: Nullable(Type.String({ format: 'date-time' })),
    lastError: Nullable(Type.String()),
    vipMode: Nullable(
      StringEnum(['active-active', 'active-standby'], {
        description:
          'how the node serves VIPs: all nodes at once (SO_REUSEPORT) or one carrying each; null: not connected since the upgrade',
      }),
    ),
    load: NodeLoad,
    ...Timestamps,
  },
  { title: 'Node' },
);
export type Node = Static<typeof Node>;

export const UpdateNode = Type.Object(
  {
    capacityWeight: Type.Optional(Capacity),
    drain: Type.Optional(Type.Boolean({ description: 'take no new load balancers, move the ones it has' })),
  },
  { title: 'UpdateNode', additionalProperties: false, minProperties: 1 },
);
export type UpdateNode = Static<typeof UpdateNode>;

export const NodePage = Page(Node, 'NodePage');

/** An admin registers a node before it may join: its kind and address are bound to its credential. */
export const CreateNode = Type.Object(
  {
    kind: NodeKind,
    address: Type.String({
      minLength: 2,
      maxLength: 45,
      description: 'the address its listeners bind and clients reach (IPv4 or IPv6)',
    }),
    name: Type.Optional(Name),
    capacityWeight: Type.Optional(Capacity),
  },
  { title: 'CreateNode', additionalProperties: false },
);
export type CreateNode = Static<typeof CreateNode>;

const JoinToken = Type.String({
  description: 'one-time token the node exchanges for its own credential (SLB_NODE_JOIN_TOKEN); shown once, valid 24 h',
});

export const RegisteredNode = Type.Object({ ...Node.properties, joinToken: JoinToken }, { title: 'RegisteredNode' });
export type RegisteredNode = Static<typeof RegisteredNode>;

/** A new join token for a registered node; its current credential works until the new token is used. */
export const NodeJoinToken = Type.Object(
  { nodeId: NodeId, joinToken: JoinToken, expiresAt: Type.String({ format: 'date-time' }) },
  { title: 'NodeJoinToken' },
);
export type NodeJoinToken = Static<typeof NodeJoinToken>;
