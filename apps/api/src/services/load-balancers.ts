import { type Db, loadBalancers, newId } from '@slb/db';
import type { CreateLoadBalancer, ListQuery, LoadBalancer, Placement, UpdateLoadBalancer } from '@slb/model';
import type Database from 'better-sqlite3';
import { and, asc, eq, getTableColumns, sql } from 'drizzle-orm';
import { ApiError, notFound, unprocessable } from '../errors.js';
import type { AuthContext } from './auth.js';
import { checkIfMatch, cursorFilter, isUniqueViolation, nowIso, type Scope, tenantFilter, toPage } from './common.js';
import type { QuotaService } from './quotas.js';
import type { VipAllocator } from './vip-allocator.js';

type LoadBalancerRow = typeof loadBalancers.$inferSelect;
export const DEFAULT_DNS_ZONE = 'slb.internal';

/** A load_balancers row as SQLite returns it (aliased to the drizzle keys), typed as drizzle would. */
function fromSql(raw: unknown): LoadBalancerRow | undefined {
  if (raw === undefined) return undefined;
  const r = raw as Record<string, unknown>;
  return {
    ...(r as LoadBalancerRow),
    deletionProtection: r.deletionProtection === 1,
    tags: JSON.parse(r.tags as string) as Record<string, string>,
  };
}

/**
 * Where an LB runs and whether its nodes caught up: the control hub knows, the database does not. (Its
 * `addresses` are no longer read: an LB's address is its VIP, from the database.)
 */
export type RuntimeView = (lbId: string, configVersion: number) => Pick<LoadBalancer, 'status' | 'addresses' | 'nodes'>;

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

  constructor(
    private readonly db: Db,
    sqlite: Database.Database,
    private readonly runtime: RuntimeView,
    private readonly dnsZone = DEFAULT_DNS_ZONE,
    private readonly quotas?: QuotaService,
    private readonly vips?: VipAllocator,
  ) {
    // Plain better-sqlite3 statements: this read runs on every GET of an LB, and the query builder's
    // per-call mapping was a measurable share of it.
    const columns = getTableColumns(loadBalancers);
    const select = Object.entries(columns)
      .map(([key, column]) => `"${column.name}" AS "${key}"`)
      .join(', ');
    const byId = sqlite.prepare(`SELECT ${select} FROM load_balancers WHERE id = ?`);
    const byIdInTenant = sqlite.prepare(`SELECT ${select} FROM load_balancers WHERE id = ? AND tenant_id = ?`);
    this.byId = { get: ({ id }: { id: string }) => fromSql(byId.get(id)) };
    this.byIdInTenant = {
      get: ({ id, tenantId }: { id: string; tenantId: string }) => fromSql(byIdInTenant.get(id, tenantId)),
    };
  }

  toApi(row: LoadBalancerRow): LoadBalancer {
    const { status, nodes } = this.runtime(row.id, row.configVersion);
    return {
      id: row.id,
      tenantId: row.tenantId,
      name: row.name,
      addressType: row.addressType,
      placement: { mode: row.placementMode, nodeCount: row.placementNodeCount },
      deletionProtection: row.deletionProtection,
      tags: row.tags,
      status,
      configVersion: row.configVersion,
      address: row.address,
      addressPoolId: row.addressPoolId,
      addresses: row.address === null ? [] : [row.address],
      nodes,
      dnsName: `${row.id}.${this.dnsZone}`,
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

  /** For the DNS responder: the LB's VIP (none before it has one), or null when there is no such LB. */
  addressesOf(id: string): string[] | null {
    const row = this.byId.get({ id });
    if (!row) return null;
    return row.address === null ? [] : [row.address];
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
    return toPage(rows, limit, (r) => this.toApi(r));
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
      address: null,
      addressPoolId: null,
      addressOffset: null,
      revision: 1,
      createdAt: now,
      updatedAt: now,
    };
    // Immediate: the count, the VIP pick and the insert hold the write lock together, even across processes.
    return this.db.transaction(
      () => {
        this.quotas?.check(auth.tenantId, 'loadBalancers', auth.tenantId);
        const vip = this.vips?.allocate(auth.tenantId, input.address);
        const withVip = {
          ...row,
          address: vip?.address ?? null,
          addressPoolId: vip?.poolId ?? null,
          addressOffset: vip?.offset ?? null,
        };
        try {
          this.db.insert(loadBalancers).values(withVip).run();
        } catch (err) {
          // Only the unique VIP index can clash here; the lock makes it a second line of defence.
          if (isUniqueViolation(err)) {
            throw new ApiError('address_in_use', `${withVip.address} is not available: another load balancer has it`);
          }
          throw err;
        }
        return withVip;
      },
      { behavior: 'immediate' },
    );
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
      this.vips?.hold(row);
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
