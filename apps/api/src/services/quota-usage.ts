import type { Store } from '@slb/db';
import { QUOTA_NAMES, type QuotaName } from '@slb/model';
import { type SQL, sql } from 'drizzle-orm';
import { countWith, keptCountQuery } from './usage-counts.js';

// How much of each quota is in use. A tenant-wide count is the one row usage_counts keeps: counting a
// tenant's rows cost in proportion to its size, 0.7 ms a server create at 100,000 servers (issue #22). The
// others count over an indexed parent (LB, group, listener), whose quota's ceiling bounds the range.

const kept =
  (name: QuotaName) =>
  (tenantId: string): SQL =>
    keptCountQuery(tenantId, name);

/** The count a create is checked against: `parent` is the tenant, LB, group, listener or ACL the quota is per. */
const COUNT: Record<QuotaName, (parent: string) => SQL> = {
  loadBalancers: kept('loadBalancers'),
  listenersPerLoadBalancer: (p) => sql`SELECT count(*) AS n FROM listeners WHERE load_balancer_id = ${p}`,
  listeners: kept('listeners'),
  serverGroupsPerLoadBalancer: (p) => sql`SELECT count(*) AS n FROM server_groups WHERE load_balancer_id = ${p}`,
  serversPerServerGroup: (p) => sql`SELECT count(*) AS n FROM servers WHERE server_group_id = ${p}`,
  servers: kept('servers'),
  // Each (listener, group) pair once: a rule naming the listener's default group adds nothing.
  backends: (p) => sql`SELECT coalesce(sum(c.n), 0) AS n
    FROM (SELECT id AS lid, server_group_id AS gid FROM listeners WHERE tenant_id = ${p}
          UNION SELECT listener_id, server_group_id FROM rules WHERE tenant_id = ${p}) pairs
    JOIN (SELECT server_group_id, count(*) AS n FROM servers WHERE tenant_id = ${p} GROUP BY server_group_id) c
      ON c.server_group_id = pairs.gid`,
  rulesPerListener: (p) => sql`SELECT count(*) AS n FROM rules WHERE listener_id = ${p}`,
  certificates: kept('certificates'),
  acls: kept('acls'),
  entriesPerAcl: (p) => sql`SELECT json_array_length(entries) AS n FROM acls WHERE id = ${p}`,
};

/** A tenant's usage: per-tenant quotas count its resources, per-resource ones report its fullest resource. */
const USAGE: Record<QuotaName, (tenantId: string) => SQL> = {
  loadBalancers: COUNT.loadBalancers,
  listenersPerLoadBalancer: (t) =>
    sql`SELECT max(c) AS n FROM (SELECT count(*) AS c FROM listeners WHERE tenant_id = ${t} GROUP BY load_balancer_id) AS per`,
  listeners: COUNT.listeners,
  serverGroupsPerLoadBalancer: (t) =>
    sql`SELECT max(c) AS n FROM (SELECT count(*) AS c FROM server_groups WHERE tenant_id = ${t} GROUP BY load_balancer_id) AS per`,
  serversPerServerGroup: (t) =>
    sql`SELECT max(c) AS n FROM (SELECT count(*) AS c FROM servers WHERE tenant_id = ${t} GROUP BY server_group_id) AS per`,
  servers: COUNT.servers,
  backends: COUNT.backends,
  rulesPerListener: (t) =>
    sql`SELECT max(c) AS n FROM (SELECT count(*) AS c FROM rules WHERE tenant_id = ${t} GROUP BY listener_id) AS per`,
  certificates: COUNT.certificates,
  acls: COUNT.acls,
  entriesPerAcl: (t) => sql`SELECT max(json_array_length(entries)) AS n FROM acls WHERE tenant_id = ${t}`,
};

export function countOf(store: Store, name: QuotaName, parent: string): Promise<number> {
  return countWith(store, COUNT[name](parent));
}

/** The query countOf runs (for a test of its query plan). */
export const countQuery = (name: QuotaName, parent: string): SQL => COUNT[name](parent);

export async function usageOf(store: Store, tenantId: string): Promise<Record<QuotaName, number>> {
  // One after another: inside a write they share its connection, which runs one query at a time.
  const usage: Partial<Record<QuotaName, number>> = {};
  for (const name of QUOTA_NAMES) usage[name] = await countWith(store, USAGE[name](tenantId));
  return usage as Record<QuotaName, number>;
}
