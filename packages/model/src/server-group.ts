import { type Static, Type } from '@sinclair/typebox';
import { Description, IpAddress, Name, Page, Port, ResourceId, StrictObject, Timestamps, Weight } from './common.js';
import { MAX_SERVERS_PER_GROUP } from './limits.js';

export const Server = Type.Object(
  {
    id: ResourceId('server'),
    serverGroupId: ResourceId('serverGroup'),
    address: Type.String(),
    port: Type.Integer(),
    weight: Type.Integer(),
    description: Type.String(),
    ...Timestamps,
  },
  { title: 'Server' },
);
export type Server = Static<typeof Server>;

export const ServerInput = StrictObject(
  { address: IpAddress, port: Port, weight: Type.Optional(Weight), description: Type.Optional(Description) },
  { title: 'ServerInput' },
);
export type ServerInput = Static<typeof ServerInput>;

export const ServerGroup = Type.Object(
  {
    id: ResourceId('serverGroup'),
    loadBalancerId: ResourceId('loadBalancer'),
    name: Type.String(),
    servers: Type.Array(Server),
    ...Timestamps,
  },
  { title: 'ServerGroup' },
);
export type ServerGroup = Static<typeof ServerGroup>;

export const CreateServerGroup = StrictObject(
  { name: Name, servers: Type.Optional(Type.Array(ServerInput, { maxItems: MAX_SERVERS_PER_GROUP })) },
  { title: 'CreateServerGroup' },
);
export type CreateServerGroup = Static<typeof CreateServerGroup>;

export const UpdateServerGroup = StrictObject({ name: Name }, { title: 'UpdateServerGroup' });
export type UpdateServerGroup = Static<typeof UpdateServerGroup>;

export const AddServers = StrictObject(
  { servers: Type.Array(ServerInput, { minItems: 1, maxItems: MAX_SERVERS_PER_GROUP }) },
  { title: 'AddServers' },
);
export type AddServers = Static<typeof AddServers>;

export const AddedServers = Type.Object({ items: Type.Array(Server) }, { title: 'AddedServers' });

export const UpdateServer = Type.Object(
  { weight: Type.Optional(Weight), description: Type.Optional(Description) },
  { title: 'UpdateServer', additionalProperties: false, minProperties: 1 },
);
export type UpdateServer = Static<typeof UpdateServer>;

export const ServerGroupPage = Page(ServerGroup, 'ServerGroupPage');
