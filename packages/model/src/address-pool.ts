import { type Static, Type } from '@sinclair/typebox';
import { Description, Page, ResourceId, StrictObject, Timestamps } from './common.js';

/** A VIP pool of the L4 cluster: load balancers get their addresses from pools, in creation order. */
export const AddressPool = Type.Object(
  {
    id: ResourceId('addressPool'),
    cidr: Type.String({ description: 'the network, canonical spelling (IPv4 or IPv6)' }),
    description: Type.String(),
    capacity: Type.Integer({
      description:
        'addresses it can hand out: IPv4 without network and broadcast (below /31), IPv6 without the subnet-router anycast address (below /127); at most 2^32',
    }),
    allocated: Type.Integer({ description: 'addresses load balancers hold' }),
    held: Type.Integer({ description: 'addresses of deleted load balancers, held back from others for a while' }),
    ...Timestamps,
  },
  { title: 'AddressPool' },
);
export type AddressPool = Static<typeof AddressPool>;

export const CreateAddressPool = StrictObject(
  {
    cidr: Type.String({
      minLength: 3,
      maxLength: 49,
      description: 'ADDRESS/PREFIX with no host bits set, e.g. 10.20.0.0/16; must not overlap another pool',
    }),
    description: Type.Optional(Description),
  },
  { title: 'CreateAddressPool' },
);
export type CreateAddressPool = Static<typeof CreateAddressPool>;

export const AddressPoolPage = Page(AddressPool, 'AddressPoolPage');
