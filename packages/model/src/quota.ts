import { type Static, Type } from '@sinclair/typebox';
import { ResourceId } from './common.js';
import { MAX_ACL_ENTRIES, MAX_LISTENERS_PER_NODE, MAX_RULES_PER_LISTENER, MAX_SERVERS_PER_GROUP } from './limits.js';

/**
 * Per-tenant quotas. Each has a default for the whole deployment (`SLB_QUOTA_DEFAULTS`), an admin may
 * override it per tenant, and none may exceed its ceiling: for the quotas a node also enforces, the node's
 * own limit (so a tenant raised to the ceiling still only writes configs a node can build).
 * `scope` says what the usage is counted over: the tenant, or each LB / group / listener / ACL of it.
 * Defaults follow Alibaba CLB's documented ones where it has one (60 instances per account, 50 listeners
 * per instance, 50 ACLs of 300 entries each per region).
 */
export const QUOTAS = {
  loadBalancers: { scope: 'tenant', default: 60, ceiling: 100_000, description: 'load balancers' },
  listenersPerLoadBalancer: {
    scope: 'loadBalancer',
    default: 50,
    ceiling: MAX_LISTENERS_PER_NODE,
    description: 'listeners of one load balancer',
  },
  // Every LB can come to share a node with every other, so all tenants share the fleet's listeners: this
  // keeps one tenant from taking most of them (60 LBs × 50 listeners would be 3,000 of the 10,000).
  listeners: {
    scope: 'tenant',
    default: 500,
    ceiling: MAX_LISTENERS_PER_NODE,
    description: 'listeners of all load balancers',
  },
  serverGroupsPerLoadBalancer: {
    scope: 'loadBalancer',
    default: 50,
    ceiling: 10_000,
    description: 'server groups of one load balancer',
  },
  serversPerServerGroup: {
    scope: 'serverGroup',
    default: 200,
    ceiling: MAX_SERVERS_PER_GROUP,
    description: 'servers in one server group',
  },
  servers: { scope: 'tenant', default: 1000, ceiling: 1_000_000, description: 'servers in all server groups' },
  // What the nodes hold in memory is a backend per listener and server of its groups: one big group behind
  // many listeners is many times its size on every node (1,000 servers × 200 listeners took 568 MB).
  backends: {
    scope: 'tenant',
    default: 10_000,
    ceiling: 1_000_000,
    description: 'backends the nodes hold: for each listener, the servers of its default and rule groups',
  },
  rulesPerListener: {
    scope: 'listener',
    default: 100,
    ceiling: MAX_RULES_PER_LISTENER,
    description: 'forwarding rules of one listener',
  },
  certificates: { scope: 'tenant', default: 100, ceiling: 100_000, description: 'certificates' },
  acls: { scope: 'tenant', default: 50, ceiling: 100_000, description: 'ACLs' },
  entriesPerAcl: { scope: 'acl', default: 300, ceiling: MAX_ACL_ENTRIES, description: 'entries of one ACL' },
} as const;
export type QuotaName = keyof typeof QUOTAS;
export const QUOTA_NAMES = Object.keys(QUOTAS) as QuotaName[];
export type QuotaLimits = Record<QuotaName, number>;

export const DEFAULT_QUOTAS: QuotaLimits = Object.fromEntries(
  QUOTA_NAMES.map((name) => [name, QUOTAS[name].default]),
) as QuotaLimits;

/**
 * Parses `name=limit,name=limit` (SLB_QUOTA_DEFAULTS) over the built-in defaults. A name that is not a
 * quota, a limit that is not an integer, or one above the quota's ceiling is an error naming it.
 */
export function parseQuotaDefaults(
  text: string | undefined,
): { ok: true; limits: QuotaLimits } | { ok: false; reason: string } {
  const limits = { ...DEFAULT_QUOTAS };
  for (const part of (text ?? '').split(',')) {
    const item = part.trim();
    if (item === '') continue;
    const match = /^([A-Za-z]+)\s*=\s*(\d{1,9})$/.exec(item);
    if (!match) return { ok: false, reason: `"${item}" is not name=limit` };
    const name = match[1] as QuotaName;
    const limit = Number(match[2]);
    if (!(name in QUOTAS)) return { ok: false, reason: `${name} is not a quota (${QUOTA_NAMES.join(', ')})` };
    if (limit > QUOTAS[name].ceiling) return { ok: false, reason: `${name} is at most ${QUOTAS[name].ceiling}` };
    limits[name] = limit;
  }
  return { ok: true, limits };
}

export const QuotaScope = Type.Union(
  ['tenant', 'loadBalancer', 'serverGroup', 'listener', 'acl'].map((s) => Type.Literal(s)),
  { description: 'what usage is counted over: the tenant, or each LB, server group, listener or ACL of it' },
);

export const QuotaUsage = Type.Object(
  {
    name: Type.String({ description: 'the quota, e.g. loadBalancers' }),
    description: Type.String(),
    scope: QuotaScope,
    limit: Type.Integer({ description: 'the limit in force for this tenant' }),
    default: Type.Integer({ description: "the deployment's default" }),
    overridden: Type.Boolean({ description: 'an admin set this limit for this tenant' }),
    ceiling: Type.Integer({ description: 'the highest an override may go (for node limits, what a node runs)' }),
    usage: Type.Integer({
      description:
        'what the tenant uses now; for a per-resource scope, its fullest resource (e.g. the LB with most listeners)',
    }),
  },
  { title: 'QuotaUsage' },
);
export type QuotaUsage = Static<typeof QuotaUsage>;

export const TenantQuotas = Type.Object(
  { tenantId: ResourceId('tenant'), items: Type.Array(QuotaUsage) },
  { title: 'TenantQuotas' },
);
export type TenantQuotas = Static<typeof TenantQuotas>;

const quotaOverride = (name: QuotaName) =>
  Type.Optional(
    Type.Union([Type.Integer({ minimum: 0, maximum: QUOTAS[name].ceiling }), Type.Null()], {
      description: `${QUOTAS[name].description}; null: back to the default`,
    }),
  );
type QuotaOverride = ReturnType<typeof quotaOverride>;

/** Each field: an integer sets the tenant's limit, null drops the override (back to the default). */
export const UpdateTenantQuotas = Type.Object(
  Object.fromEntries(QUOTA_NAMES.map((name) => [name, quotaOverride(name)])) as unknown as Record<
    QuotaName,
    QuotaOverride
  >,
  { title: 'UpdateTenantQuotas', additionalProperties: false, minProperties: 1 },
);
export type UpdateTenantQuotas = Partial<Record<QuotaName, number | null>>;
