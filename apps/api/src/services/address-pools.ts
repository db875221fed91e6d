import { addressHolds, addressPools, type Db, loadBalancers, newId } from '@slb/db';
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

export type AddressPoolRow = typeof addressPools.$inferSelect;

/** The local cloud's pool: loopback apart from the node addresses (127.0.0.x); Linux binds all of 127/8. */
export const DEFAULT_ADDRESS_POOLS = ['127.1.0.0/16'];

/** A stored pool's network; stored CIDRs were checked on the way in. */
export const networkOf = (pool: AddressPoolRow): IpNetwork => parseNetwork(pool.cidr)!;

/** The VIP pools of the L4 cluster, cluster-wide: admin only. */
export class AddressPoolService {
  constructor(private readonly db: Db) {}

  toApi(row: AddressPoolRow): AddressPool {
    const allocated = poolAddressCount(this.db, row.id);
    const held =
      this.db
        .select({ n: count() })
        .from(addressHolds)
        .where(and(eq(addressHolds.poolId, row.id), gt(addressHolds.holdUntil, nowIso())))
        .get()?.n ?? 0;
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
  all(): AddressPoolRow[] {
    return this.db.select().from(addressPools).orderBy(asc(addressPools.id)).all();
  }

  find(id: string): AddressPoolRow {
    const row = this.db.select().from(addressPools).where(eq(addressPools.id, id)).get();
    if (!row) throw notFound('address pool', id);
    return row;
  }

  list(query: ListQuery) {
    const limit = query.limit ?? 50;
    const rows = this.db
      .select()
      .from(addressPools)
      .where(cursorFilter(addressPools.id, query.cursor))
      .orderBy(asc(addressPools.id))
      .limit(limit + 1)
      .all();
    return toPage(rows, limit, (r) => this.toApi(r));
  }

  create(input: CreateAddressPool): AddressPoolRow {
    const problem = cidrProblem(input.cidr);
    const network = problem === null ? parseNetwork(input.cidr) : null;
    if (network === null) throw unprocessable('/cidr', problem ?? 'not a CIDR');
    return this.db.transaction(
      () => {
        // Two pools sharing an address would hand it out twice.
        const clash = this.all().find((p) => networksOverlap(networkOf(p), network));
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
        this.db.insert(addressPools).values(row).run();
        return row;
      },
      { behavior: 'immediate' },
    );
  }

  /** Held addresses go with the pool: only load balancers still on it keep it. */
  remove(id: string): void {
    this.db.transaction(() => {
      this.find(id);
      const users = this.db
        .select({ n: count() })
        .from(loadBalancers)
        .where(eq(loadBalancers.addressPoolId, id))
        .get()?.n;
      if (users) {
        throw new ApiError(
          'address_pool_in_use',
          `address pool ${id} still has ${users} load balancer address(es) allocated: delete those load balancers first`,
        );
      }
      this.db.delete(addressPools).where(eq(addressPools.id, id)).run();
    });
  }

  /** At start: a deployment without pools gets the configured ones (none when the list is empty). */
  seed(cidrs: string[]): number {
    return this.db.transaction(
      () => {
        if (this.db.select({ n: count() }).from(addressPools).get()?.n) return 0;
        for (const cidr of cidrs) this.create({ cidr, description: 'from SLB_ADDRESS_POOLS' });
        return cidrs.length;
      },
      { behavior: 'immediate' },
    );
  }
}
