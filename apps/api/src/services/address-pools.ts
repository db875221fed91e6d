import { newId, type Store, type Tables } from '@slb/db';
import {
  type AddressPool,
  type CreateAddressPool,
  formatNetwork,
  type IpNetwork,
  type ListQuery,
  networksOverlap,
  parseNetwork,
  poolRange,
} from '@slb/model';
import { and, asc, count, eq, gt } from 'drizzle-orm';
import { cidrProblem } from '../domain/cidr.js';
import { ApiError, notFound, unprocessable } from '../errors.js';
import { cursorFilter, nowIso, toPage } from './common.js';
import { poolAddressCount } from './usage-counts.js';

export type AddressPoolRow = Tables['addressPools']['$inferSelect'];

/** The local cloud's pool: loopback apart from the node addresses (127.0.0.x); Linux binds all of 127/8. */
export const DEFAULT_ADDRESS_POOLS = ['127.1.0.0/16'];

/** A stored pool's network; stored CIDRs were checked on the way in. */
export const networkOf = (pool: AddressPoolRow): IpNetwork => parseNetwork(pool.cidr)!;

/** The VIP pools of the L4 cluster, cluster-wide: admin only. */
export class AddressPoolService {
  constructor(private readonly store: Store) {}

  async toApi(row: AddressPoolRow): Promise<AddressPool> {
    const { t } = this.store;
    const allocated = await poolAddressCount(this.store, row.id);
    const [holds] = await this.store.read((q) =>
      q
        .select({ n: count() })
        .from(t.addressHolds)
        .where(and(eq(t.addressHolds.poolId, row.id), gt(t.addressHolds.holdUntil, nowIso()))),
    );
    const held = holds?.n ?? 0;
    return {
      id: row.id,
      cidr: row.cidr,
      description: row.description,
      capacity: Number(poolRange(networkOf(row)).capacity),
      allocated,
      held,
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
    };
  }

  /** Every pool, oldest first: the order VIPs are allocated in. */
  all(): Promise<AddressPoolRow[]> {
    const { t } = this.store;
    return this.store.read((q) => q.select().from(t.addressPools).orderBy(asc(t.addressPools.id)));
  }

  async find(id: string): Promise<AddressPoolRow> {
    const { t } = this.store;
    const [row] = await this.store.read((q) => q.select().from(t.addressPools).where(eq(t.addressPools.id, id)));
    if (!row) throw notFound('address pool', id);
    return row;
  }

  async list(query: ListQuery) {
    const { t } = this.store;
    const limit = query.limit ?? 50;
    const rows = await this.store.read((q) =>
      q
        .select()
        .from(t.addressPools)
        .where(cursorFilter(t.addressPools.id, query.cursor))
        .orderBy(asc(t.addressPools.id))
        .limit(limit + 1),
    );
    const page = toPage(rows, limit, (r) => r);
    return { ...page, items: await Promise.all(page.items.map((r) => this.toApi(r))) };
  }

  create(input: CreateAddressPool): Promise<AddressPoolRow> {
    const problem = cidrProblem(input.cidr);
    const network = problem === null ? parseNetwork(input.cidr) : null;
    if (network === null) throw unprocessable('/cidr', problem ?? 'not a CIDR');
    return this.store.write(async (q) => {
      // Two pools sharing an address would hand it out twice.
      const clash = (await this.all()).find((p) => networksOverlap(networkOf(p), network));
      if (clash) {
        throw new ApiError(
          'address_pool_overlap',
          `${formatNetwork(network)} overlaps address pool ${clash.id} (${clash.cidr})`,
          [{ path: '/body/cidr', message: `overlaps ${clash.cidr}` }],
        );
      }
      const now = nowIso();
      const row: AddressPoolRow = {
        id: newId('addressPool'),
        cidr: formatNetwork(network),
        description: input.description ?? '',
        createdAt: now,
        updatedAt: now,
      };
      await q.insert(this.store.t.addressPools).values(row);
      return row;
    });
  }

  /** Held addresses go with the pool: only load balancers still on it keep it. */
  async remove(id: string): Promise<void> {
    const { t } = this.store;
    await this.store.write(async (q) => {
      await this.find(id);
      const [lbs] = await q.select({ n: count() }).from(t.loadBalancers).where(eq(t.loadBalancers.addressPoolId, id));
      const users = lbs?.n;
      if (users) {
        throw new ApiError(
          'address_pool_in_use',
          `address pool ${id} still has ${users} load balancer address(es) allocated: delete those load balancers first`,
        );
      }
      await q.delete(t.addressPools).where(eq(t.addressPools.id, id));
    });
  }

  /** At start: a deployment without pools gets the configured ones (none when the list is empty). */
  seed(cidrs: string[]): Promise<number> {
    return this.store.write(async (q) => {
      const [pools] = await q.select({ n: count() }).from(this.store.t.addressPools);
      if (pools?.n) return 0;
      for (const cidr of cidrs) await this.create({ cidr, description: 'from SLB_ADDRESS_POOLS' });
      return cidrs.length;
    });
  }
}
