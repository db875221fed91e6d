import { type Static, Type } from '@sinclair/typebox';
import {
  CreateListener,
  CreateLoadBalancer,
  CreateRule,
  ListenerStatus,
  Name,
  ServerInput,
  StrictObject,
  StringEnum,
  UpdateLoadBalancer,
} from '@slb/model';

/*
 * The file `slb apply -f` takes: one load balancer, whole. Everything is named, never an id, so one file
 * serves every installation: server groups and servers by name and address:port, listeners by protocol
 * and port, rules by domain and path, certificates and ACLs by name. The field schemas are the API's own
 * (packages/model), so a value the API would refuse is refused here first, with the same limits.
 *
 * A field left out is left as it is on the live resource (on a create, the API's default). What the file
 * leaves out one level up (a listener, a server group, a server, a rule) is deleted: the file is the LB.
 */

export const SPEC_API_VERSION = 'slb/v1';

/** The same schema with a description of its own (the Kind symbol survives the spread). */
const described = <T extends object>(schema: T, description: string): T => ({ ...schema, description });

const { serverGroupId, certificateId, additionalCertificateIds, acl, protocol, port, ...listenerFields } =
  CreateListener.properties;
void serverGroupId;
void certificateId;
void additionalCertificateIds;
void acl;

export const RuleSpec = StrictObject(
  {
    domain: CreateRule.properties.domain,
    path: CreateRule.properties.path,
    serverGroup: described(Name, 'a server group of this file, by name'),
    priority: CreateRule.properties.priority,
  },
  { title: 'RuleSpec', description: 'one forwarding rule, identified by its domain and path' },
);
export type RuleSpec = Static<typeof RuleSpec>;

export const ListenerSpec = StrictObject(
  {
    protocol,
    port,
    serverGroup: described(Name, 'the default server group of this file, by name'),
    certificate: Type.Optional(Type.Union([Name, Type.Null()], { description: 'https: a certificate, by name' })),
    additionalCertificates: Type.Optional(
      Type.Array(Name, { uniqueItems: true, description: 'https SNI certificates, by name' }),
    ),
    acl: Type.Optional(
      Type.Union([StrictObject({ name: Name, mode: StringEnum(['allow', 'deny']) }), Type.Null()], {
        description: 'an access control list, by name',
      }),
    ),
    status: Type.Optional(ListenerStatus),
    rules: Type.Optional(Type.Array(RuleSpec, { description: 'http/https only' })),
    ...listenerFields,
  },
  { title: 'ListenerSpec', description: 'one listener, identified by its protocol and port' },
);
export type ListenerSpec = Static<typeof ListenerSpec>;

export const ServerGroupSpec = StrictObject(
  { name: Name, servers: Type.Optional(Type.Array(ServerInput, { description: 'identified by address and port' })) },
  { title: 'ServerGroupSpec', description: 'one server group, identified by its name' },
);
export type ServerGroupSpec = Static<typeof ServerGroupSpec>;

export const LoadBalancerSpec = Type.Object(
  {
    apiVersion: Type.Literal(SPEC_API_VERSION),
    kind: Type.Literal('LoadBalancer'),
    name: described(Name, "the load balancer, found by name among the caller's"),
    address: described(
      CreateLoadBalancer.properties.address,
      'its VIP: chosen at create only; a live LB keeps the one it has',
    ),
    addressType: CreateLoadBalancer.properties.addressType,
    placement: UpdateLoadBalancer.properties.placement,
    deletionProtection: UpdateLoadBalancer.properties.deletionProtection,
    tags: UpdateLoadBalancer.properties.tags,
    serverGroups: Type.Optional(Type.Array(ServerGroupSpec)),
    listeners: Type.Optional(Type.Array(ListenerSpec)),
  },
  {
    $id: 'https://slb.dev/schemas/load-balancer-file.json',
    title: 'SLB load balancer file',
    description: 'One load balancer, whole, as `slb apply -f`, `slb plan -f` and `slb export` read and write it.',
    additionalProperties: false,
  },
);
export type LoadBalancerSpec = Static<typeof LoadBalancerSpec>;
