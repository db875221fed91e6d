import { type Static, Type } from '@sinclair/typebox';
import { Nullable, ResourceId, StrictObject, Timestamp } from './common.js';

// A tenant's allowed backend networks (its "VPC"): the only networks its servers may be in. Set by an
// admin; a tenant without its own list follows the cloud's default (SLB_DEFAULT_BACKEND_NETWORKS).

/** Most networks one tenant may be given: enough for any VPC layout, few enough to check per server. */
export const MAX_BACKEND_NETWORKS = 100;

/**
 * The production default for tenants without their own list: the private address ranges (RFC 1918, the
 * shared address space of RFC 6598, IPv6 ULA). Loopback is not in it: a loopback backend is the node's own
 * host. The local cloud adds 127.0.0.0/8 through the variable.
 */
export const DEFAULT_BACKEND_NETWORKS = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10',
  'fc00::/7',
] as const;

const NetworkCidr = Type.String({
  minLength: 2,
  maxLength: 49,
  description: 'IPv4 or IPv6 CIDR, e.g. 10.0.0.0/8, fd00::/8',
});

export const BackendNetworks = Type.Object(
  {
    tenantId: ResourceId('tenant'),
    networks: Type.Array(Type.String(), { description: 'CIDRs the tenant may put servers in' }),
    isDefault: Type.Boolean({ description: "true: the tenant has no list of its own and follows the cloud's default" }),
    updatedAt: Nullable(Timestamp),
    serversOutside: Type.Integer({
      minimum: 0,
      description:
        "the tenant's servers the policy now refuses (after its networks were narrowed): they keep serving, but a write to them is refused",
    }),
  },
  { title: 'BackendNetworks' },
);
export type BackendNetworks = Static<typeof BackendNetworks>;

export const PutBackendNetworks = StrictObject(
  {
    networks: Nullable(
      Type.Array(NetworkCidr, {
        maxItems: MAX_BACKEND_NETWORKS,
        description: "the tenant's networks; an empty list allows no backend; null returns to the default",
      }),
    ),
  },
  { title: 'PutBackendNetworks' },
);
export type PutBackendNetworks = Static<typeof PutBackendNetworks>;
