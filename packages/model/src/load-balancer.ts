import { type Static, Type } from '@sinclair/typebox';
import { ListQuery, Name, Nullable, Page, ResourceId, StrictObject, StringEnum, Tags, Timestamps } from './common.js';
import { NodeKind } from './node.js';

export const AddressType = StringEnum(['internet', 'intranet']);
export const PlacementMode = StringEnum(['all', 'spread']);

export const Placement = StrictObject({
  mode: PlacementMode,
  nodeCount: Type.Optional(Type.Integer({ minimum: 1, maximum: 64, description: 'with mode spread only' })),
});
export type Placement = Static<typeof Placement>;

export const LoadBalancerStatus = StringEnum(['provisioning', 'active']);

export const LoadBalancer = Type.Object(
  {
    id: ResourceId('loadBalancer'),
    tenantId: ResourceId('tenant'),
    name: Type.String(),
    addressType: AddressType,
    placement: Type.Object({ mode: PlacementMode, nodeCount: Nullable(Type.Integer()) }),
    deletionProtection: Type.Boolean(),
    tags: Type.Record(Type.String(), Type.String()),
    status: LoadBalancerStatus,
    configVersion: Type.Integer({ description: 'bumped by every change to the LB or anything under it' }),
    address: Nullable(
      Type.String({
        description:
          'its VIP, from an address pool; null only for a load balancer from before VIPs that no pool had room for at the upgrade (it gets one at the next start that finds room)',
      }),
    ),
    addressPoolId: Nullable(ResourceId('addressPool')),
    addresses: Type.Array(Type.String(), { description: 'the addresses clients reach it on: its VIP' }),
    nodes: Type.Array(
      Type.Object({
        nodeId: Type.String(),
        kind: NodeKind,
        address: Type.String(),
        online: Type.Boolean(),
        converged: Type.Boolean({ description: 'the node acked a config carrying this configVersion' }),
        error: Type.Optional(
          Type.String({ description: 'why the node does not serve it (e.g. a VIP it cannot bind)' }),
        ),
        role: Type.Optional(
          StringEnum(['active', 'standby'], { description: 'active-standby nodes: whether this one carries the VIP' }),
        ),
      }),
      {
        description:
          'the nodes serving it and whether each has applied its latest change: the L4 nodes hosting it, and every L7 node when it has HTTP or HTTPS listeners',
      },
    ),
    dnsName: Type.String(),
    ...Timestamps,
  },
  { title: 'LoadBalancer' },
);
export type LoadBalancer = Static<typeof LoadBalancer>;

export const CreateLoadBalancer = StrictObject(
  {
    name: Name,
    address: Type.Optional(
      Type.String({
        minLength: 2,
        maxLength: 45,
        description:
          'a specific VIP (IPv4 or IPv6) from an address pool: 409 address_in_use when taken, 422 when in no pool; absent: the lowest free one',
      }),
    ),
    addressType: Type.Optional(AddressType),
    placement: Type.Optional(Placement),
    deletionProtection: Type.Optional(Type.Boolean()),
    tags: Type.Optional(Tags),
  },
  { title: 'CreateLoadBalancer' },
);
export type CreateLoadBalancer = Static<typeof CreateLoadBalancer>;

export const UpdateLoadBalancer = Type.Object(
  {
    name: Type.Optional(Name),
    placement: Type.Optional(Placement),
    deletionProtection: Type.Optional(Type.Boolean()),
    tags: Type.Optional(Tags),
  },
  { title: 'UpdateLoadBalancer', additionalProperties: false, minProperties: 1 },
);
export type UpdateLoadBalancer = Static<typeof UpdateLoadBalancer>;

export const ListLoadBalancersQuery = ListQuery;
export const LoadBalancerPage = Page(LoadBalancer, 'LoadBalancerPage');
