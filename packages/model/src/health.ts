import { type Static, Type } from '@sinclair/typebox';
import { Nullable, ResourceId, StringEnum } from './common.js';

export const ServerHealthStatus = StringEnum(['normal', 'abnormal', 'unavailable']);
export type ServerHealthStatus = Static<typeof ServerHealthStatus>;

export const ServerHealth = Type.Object(
  {
    listenerId: ResourceId('listener'),
    serverGroupId: ResourceId('serverGroup'),
    serverId: ResourceId('server'),
    address: Type.String(),
    port: Type.Integer(),
    status: ServerHealthStatus,
    since: Type.String({ format: 'date-time' }),
    lastError: Type.Optional(Nullable(Type.String())),
  },
  { title: 'ServerHealth' },
);
export type ServerHealth = Static<typeof ServerHealth>;

export const LoadBalancerHealth = Type.Object({ items: Type.Array(ServerHealth) }, { title: 'LoadBalancerHealth' });
