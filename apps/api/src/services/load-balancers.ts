import { newId, type PreparedRun, type Store, type Tables } from '@slb/db';
import type { CreateLoadBalancer, ListQuery, LoadBalancer, Placement, UpdateLoadBalancer } from '@slb/model';
import { and, asc, eq, sql } from 'drizzle-orm';
import { ApiError, notFound, unprocessable } from '../errors.js';
import type { AuthContext } from './auth.js';
import { checkIfMatch, cursorFilter, isUniqueViolation, nowIso, type Scope, tenantFilter, toPage } from './common.js';
import type { QuotaService } from './quotas.js';
import type { VipAllocator } from './vip-allocator.js';

type LoadBalancerRow = Tables['loadBalancers']['$inferSelect'];
export const DEFAULT_DNS_ZONE = 'slb.internal';
const VIP_INDEX = { index: 'load_balancers_address_uq', column: 'load_balancers.address' };

/**
 * Where LBs run and whether their nodes caught up, in the order asked: the control hubs know (each replica's
 * of the nodes connected to it), the database does not.
 */
export type RuntimeView = (
  lbs: readonly { id: string; configVersion: number }[],
) => Promise<Pick<LoadBalancer, 'status' | 'nodes'>[]>;

export function checkPlacement(placement: Placement): void {
  if (placement.mode === 'all' && placement.nodeCount !== undefined) {
    throw unprocessable('/placement/nodeCount', 'only with mode spread (mode all uses every L4 node)');
  }
  if (placement.mode === 'spread' && placement.nodeCount === undefined) {
    throw unprocessable('/placement/nodeCount', 'required with mode spread');
  }
}

export class LoadBalancerService {
  // Reads on every GET of an LB or anything under it: prepared once, not rebuilt per request (the query
  // builder cost 2.5x the rest of such a request).
  private readonly byId: PreparedRun<LoadBalancerRow[]>;
  private readonly byIdInTenant: PreparedRun<LoadBalancerRow[]>;

  constructor(
    private readonly store: Store,
    private readonly runtime: RuntimeView,
    private readonly dnsZone = DEFAULT_DNS_ZONE,
    private readonly quotas?: QuotaService,
    private readonly vips?: VipAllocator,
  ) {
    const { t } = store;
    this.byId = store.prepare('lb_by_id', (q) =>
      q
        .select()
        .from(t.loadBalancers)
        .where(eq(t.loadBalancers.id, sql.placeholder('id'))),
    );
    this.byIdInTenant = store.prepare('lb_by_id_in_tenant', (q) =>
      q
        .select()
        .from(t.loadBalancers)
        .where(
          and(eq(t.loadBalancers.id, sql.placeholder('id')), eq(t.loadBalancers.tenantId, sql.placeholder('tenantId'))),
        ),
    );
  }

  async toApi(row: LoadBalancerRow): Promise<LoadBalancer> {
    const [runtime] = await this.runtime([row]);
    return this.withRuntime(row, runtime ?? { status: 'provisioning', nodes: [] });
  }

  private withRuntime(row: LoadBalancerRow, { status, nodes }: Pick<LoadBalancer, 'status' | 'nodes'>): LoadBalancer {
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

  async find(scope: Scope, id: string): Promise<LoadBalancerRow> {
    const [row] =
      scope.tenantId === null ? await this.byId({ id }) : await this.byIdInTenant({ id, tenantId: scope.tenantId });
    if (!row) throw notFound('load balancer', id);
    return row;
  }

  /** For the DNS responder: the LB's VIP (none before it has one), or null when there is no such LB. */
  async addressesOf(id: string): Promise<string[] | null> {
    const [row] = await this.byId({ id });
    if (!row) return null;
    return row.address === null ? [] : [row.address];
  }

  async list(scope: Scope, query: ListQuery) {
    const { t } = this.store;
    const limit = query.limit ?? 50;
    const rows = await this.store.read((q) =>
      q
        .select()
        .from(t.loadBalancers)
        .where(and(tenantFilter(t.loadBalancers.tenantId, scope), cursorFilter(t.loadBalancers.id, query.cursor)))
        .orderBy(asc(t.loadBalancers.id))
        .limit(limit + 1),
    );
    const page = toPage(rows, limit, (r) => r);
    const runtimes = await this.runtime(page.items);
    return {
      ...page,
      items: page.items.map((r, i) => this.withRuntime(r, runtimes[i] ?? { status: 'provisioning', nodes: [] })),
    };
  }

  create(auth: AuthContext, input: CreateLoadBalancer): Promise<LoadBalancerRow> {
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
    // One write: the count, the VIP pick and the insert commit together.
    return this.store.write(async () => {
      await this.quotas?.check(auth.tenantId, 'loadBalancers', auth.tenantId);
      const vip = await this.vips?.allocate(auth.tenantId, input.address);
      const withVip = {
        ...row,
        address: vip?.address ?? null,
        addressPoolId: vip?.poolId ?? null,
        addressOffset: vip?.offset ?? null,
      };
      try {
        // A savepoint: on PostgreSQL a refused statement would otherwise abort the whole transaction.
        await this.store.write((inner) => inner.insert(this.store.t.loadBalancers).values(withVip));
      } catch (err) {
        // The allocation's lock keeps replicas from picking one address; the unique index is the second line.
        if (isUniqueViolation(err, VIP_INDEX)) {
          throw new ApiError('address_in_use', `${withVip.address} is not available: another load balancer has it`);
        }
        throw err;
      }
      return withVip;
    });
  }

  update(scope: Scope, id: string, input: UpdateLoadBalancer, ifMatch?: string): Promise<LoadBalancerRow> {
    return this.store.write(async (q) => {
      const row = await this.find(scope, id);
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
      await q.update(this.store.t.loadBalancers).set(next).where(eq(this.store.t.loadBalancers.id, id));
      return { ...row, ...next };
    });
  }

  async remove(scope: Scope, id: string, ifMatch?: string): Promise<void> {
    await this.store.write(async (q) => {
      const row = await this.find(scope, id);
      checkIfMatch(ifMatch, row.revision);
      if (row.deletionProtection) {
        throw new ApiError('deletion_protected', `load balancer ${id} has deletionProtection on; turn it off first`);
      }
      await q.delete(this.store.t.loadBalancers).where(eq(this.store.t.loadBalancers.id, id));
      await this.vips?.hold(row);
    });
  }

  /** Any change under an LB is a new config version for the nodes that host it. */
  async bumpConfig(id: string): Promise<void> {
    const { t } = this.store;
    await this.store.write((q) =>
      q
        .update(t.loadBalancers)
        .set({ configVersion: sql`${t.loadBalancers.configVersion} + 1` })
        .where(eq(t.loadBalancers.id, id)),
    );
  }
}
