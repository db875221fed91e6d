import { type Static, Type } from '@sinclair/typebox';
import { Nullable, Page, ResourceId, StringEnum, Timestamps } from './common.js';

export const NodeKind = StringEnum(['l4', 'l7']);
export const NodeLoad = Type.Object({
  activeConnections: Type.Integer(),
  newConnectionsPerSecond: Type.Number(),
  requestsPerSecond: Type.Number(),
});

export const Node = Type.Object(
  {
    id: ResourceId('node'),
    kind: NodeKind,
    address: Type.String(),
    status: StringEnum(['online', 'offline']),
    capacityWeight: Type.Integer(),
    drain: Type.Boolean(),
    appliedConfigVersion: Type.Integer(),
    lastHeartbeatAt: Nullable(Type.String({ format: 'date-time' })),
    lastError: Nullable(Type.String()),
    load: NodeLoad,
    ...Timestamps,
  },
  { title: 'Node' },
);
export type Node = Static<typeof Node>;

export const UpdateNode = Type.Object(
  {
    capacityWeight: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 1000, description: '100 = normal; placement points scale with it' }),
    ),
    drain: Type.Optional(Type.Boolean({ description: 'take no new load balancers, move the ones it has' })),
  },
  { title: 'UpdateNode', additionalProperties: false, minProperties: 1 },
);
export type UpdateNode = Static<typeof UpdateNode>;

export const NodePage = Page(Node, 'NodePage');
