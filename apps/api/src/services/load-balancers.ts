import { type Db, loadBalancers, newId, nodes } from '@slb/db';
import type { CreateLoadBalancer, ListQuery, LoadBalancer, Placement, UpdateLoadBalancer } from '@slb/model';
import { and, asc, eq, sql } from 'drizzle-orm';
import { ApiError, notFound, unprocessable } from '../errors.js';
import type { AuthContext } from './auth.js';
import { checkIfMatch, cursorFilter, nowIso, type Scope, tenantFilter, toPage } from './common.js';

type LoadBalancerRow = typeof loadBalancers.$inferSelect;
export const DNS_ZONE = 'slb.internal';

export function checkPlacement(placement: Placement): void {
  if (placement.mode === 'all' && placement.nodeCount !== undefined) {
    throw unprocessable('/placement/nodeCount', 'only with mode spread (mode all uses every L4 node)');
  }
  if (placement.mode === 'spread' && placement.nodeCount === undefined) {
    throw unprocessable('/placement/nodeCount', 'required with mode spread');
  }
}

export class LoadBalancerService {
  // Reads are the hot path of the API: prepared once, not rebuilt by the query builder per request.
  private readonly byId;
  private readonly byIdInTenant;
  private readonly l4Addresses;

  constructor(private readonly db: Db) {
    this.byId = db
      .select()
      .from(loadBalancers)
      .where(eq(loadBalancers.id, sql.placeholder('id')))
      .prepare();
    this.byIdInTenant = db
      .select()
      .from(loadBalancers)
      .where(and(eq(loadBalancers.id, sql.placeholder('id')), eq(loadBalancers.tenantId, sql.placeholder('tenantId'))))
      .prepare();
    this.l4Addresses = db
      .select({ address: nodes.address })
      .from(nodes)
      .where(and(eq(nodes.kind, 'l4'), eq(nodes.drain, false)))
      .prepare();
  }

  private addressCache = { at: 0, addresses: [] as string[] };

  /**
   * Addresses of the L4 nodes; until the control channel places LBs, every LB is on all of them.
   * Cached for a second: node membership moves at heartbeat pace, reads come thousands per second.
   */
  private hostingAddresses(now = Date.now()): string[] {
    if (now - this.addressCache.at > 1000) {
      this.addressCache = { at: now, addresses: this.l4Addresses.all().map((n) => n.address) };
    }
    return this.addressCache.addresses;
  }

  toApi(row: LoadBalancerRow, addresses = this.hostingAddresses()): LoadBalancer {
    return {
      id: row.id,
      tenantId: row.tenantId,
      name: row.name,
      addressType: row.addressType,
      placement: { mode: row.placementMode, nodeCount: row.placementNodeCount },
      deletionProtection: row.deletionProtection,
      tags: row.tags,
      // No node has acked this LB's config until the control channel exists: provisioning is the honest answer.
      status: 'provisioning',
      configVersion: row.configVersion,
      addresses,
      dnsName: `${row.id}.${DNS_ZONE}`,
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
    };
  }

  find(scope: Scope, id: string): LoadBalancerRow {
    const row =
      scope.tenantId === null ? this.byId.get({ id }) : this.byIdInTenant.get({ id, tenantId: scope.tenantId });
    if (!row) throw notFound('load balancer', id);
    return row;
  }

  list(scope: Scope, query: ListQuery) {
    const limit = query.limit ?? 50;
    const rows = this.db
      .select()
      .from(loadBalancers)
      .where(and(tenantFilter(loadBalancers.tenantId, scope), cursorFilter(loadBalancers.id, query.cursor)))
      .orderBy(asc(loadBalancers.id))
      .limit(limit + 1)
      .all();
    const addresses = this.hostingAddresses();
    return toPage(rows, limit, (r) => this.toApi(r, addresses));
  }

  create(auth: AuthContext, input: CreateLoadBalancer): LoadBalancerRow {
    const placement = input.placement ?? { mode: 'all' };
    checkPlacement(placement);
    const now = nowIso();
    const row: LoadBalancerRow = {
      id: newId('loadBalancer'),
      tenantId: auth.tenantId,
      name: input.name,
      addressType: input.addressType ?? 'intranet',
      placementMode: placement.mode,
      placementNodeCount: placement.nodeCount ?? null,
      deletionProtection: input.deletionProtection ?? false,
      tags: input.tags ?? {},
      configVersion: 1,
      revision: 1,
      createdAt: now,
      updatedAt: now,
    };
    this.db.insert(loadBalancers).values(row).run();
    return row;
  }

  update(scope: Scope, id: string, input: UpdateLoadBalancer, ifMatch?: string): LoadBalancerRow {
    return this.db.transaction(() => {
      const row = this.find(scope, id);
      checkIfMatch(ifMatch, row.revision);
      if (input.placement) checkPlacement(input.placement);
      const next = {
        name: input.name ?? row.name,
        deletionProtection: input.deletionProtection ?? row.deletionProtection,
        tags: input.tags ?? row.tags,
        placementMode: input.placement?.mode ?? row.placementMode,
        placementNodeCount: input.placement ? (input.placement.nodeCount ?? null) : row.placementNodeCount,
        revision: row.revision + 1,
        configVersion: row.configVersion + 1,
        updatedAt: nowIso(),
      };
      this.db.update(loadBalancers).set(next).where(eq(loadBalancers.id, id)).run();
      return { ...row, ...next };
    });
  }

  remove(scope: Scope, id: string, ifMatch?: string): void {
    this.db.transaction(() => {
      const row = this.find(scope, id);
      checkIfMatch(ifMatch, row.revision);
      if (row.deletionProtection) {
        throw new ApiError('deletion_protected', `load balancer ${id} has deletionProtection on; turn it off first`);
      }
      this.db.delete(loadBalancers).where(eq(loadBalancers.id, id)).run();
    });
  }

  /** Any change under an LB is a new config version for the nodes that host it. */
  bumpConfig(id: string): void {
    this.db
      .update(loadBalancers)
      .set({ configVersion: sql`${loadBalancers.configVersion} + 1` })
      .where(eq(loadBalancers.id, id))
      .run();
  }
}
