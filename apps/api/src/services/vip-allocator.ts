import { addressHolds, type Db, loadBalancers } from '@slb/db';
import { formatIp, inPoolRange, lowestFree, networkContains, parseIp, poolRange } from '@slb/model';
import { and, eq, isNull, lte } from 'drizzle-orm';
import { ApiError, unprocessable } from '../errors.js';
import { type AddressPoolService, networkOf } from './address-pools.js';
import { nowIso } from './common.js';

/** How long a deleted load balancer's VIP is kept from other tenants by default (SLB_VIP_HOLD_SECONDS). */
export const DEFAULT_VIP_HOLD_SECONDS = 300;

export interface Vip {
  address: string;
  poolId: string;
}

/**
 * Hands out load balancers' VIPs. Called inside the caller's (immediate) transaction: the pick and the
 * insert hold the write lock together, and the unique index on load_balancers.address stops two writers
 * that somehow did not.
 */
export class VipAllocator {
  constructor(
    private readonly db: Db,
    private readonly pools: AddressPoolService,
    private readonly holdSeconds = DEFAULT_VIP_HOLD_SECONDS,
  ) {}

  allocate(tenantId: string, requested?: string): Vip {
    this.db.delete(addressHolds).where(lte(addressHolds.holdUntil, nowIso())).run();
    return requested === undefined ? this.lowestFree() : this.claim(tenantId, requested);
  }

  /** A specific address: free, or held for this very tenant (it takes its old VIP back). */
  private claim(tenantId: string, requested: string): Vip {
    const ip = parseIp(requested);
    if (ip === null || ip.zone !== null) throw unprocessable('/address', 'must be an IPv4 or IPv6 address (no zone)');
    const address = formatIp(ip);
    const pool = this.pools.all().find((p) => networkContains(networkOf(p), ip));
    if (!pool) throw unprocessable('/address', `${address} is in no address pool`);
    if (!inPoolRange(poolRange(networkOf(pool)), ip)) {
      throw unprocessable('/address', `${address} is a reserved address of pool ${pool.id} (${pool.cidr})`);
    }
    const holder = this.db
      .select({ id: loadBalancers.id })
      .from(loadBalancers)
      .where(eq(loadBalancers.address, address))
      .get();
    if (holder) throw addressInUse(address, 'another load balancer has it');
    const hold = this.db.select().from(addressHolds).where(eq(addressHolds.address, address)).get();
    if (hold && hold.tenantId !== tenantId) {
      throw addressInUse(address, `it is held until ${hold.holdUntil} after its load balancer was deleted`);
    }
    if (hold) this.db.delete(addressHolds).where(eq(addressHolds.address, address)).run();
    return { address, poolId: pool.id };
  }

  /** The lowest address nobody holds, over the pools in creation order. */
  private lowestFree(): Vip {
    const pools = this.pools.all();
    for (const pool of pools) {
      const range = poolRange(networkOf(pool));
      const inUse = [
        ...this.db
          .select({ a: loadBalancers.address })
          .from(loadBalancers)
          .where(eq(loadBalancers.addressPoolId, pool.id))
          .all(),
        ...this.db.select({ a: addressHolds.address }).from(addressHolds).where(eq(addressHolds.poolId, pool.id)).all(),
      ];
      const taken = inUse.flatMap(({ a }) => {
        const ip = a === null ? null : parseIp(a);
        return ip ? [ip.value] : [];
      });
      const value = lowestFree(range.first, range.capacity, taken);
      if (value !== null) return { address: formatIp({ family: range.family, value }), poolId: pool.id };
    }
    const named = pools.map((p) => `${p.id} (${p.cidr})`).join(', ');
    throw new ApiError(
      'address_pool_exhausted',
      pools.length === 0
        ? 'there is no address pool to allocate a VIP from: an admin adds one with POST /v1/address-pools'
        : `every address pool is full: ${named}; an admin adds a pool, or a load balancer is deleted (its VIP is free once its hold ends)`,
    );
  }

  /** A deleted load balancer's VIP stays its tenant's for holdSeconds. */
  hold(lb: { address: string | null; addressPoolId: string | null; tenantId: string }): void {
    if (lb.address === null || lb.addressPoolId === null || this.holdSeconds <= 0) return;
    const hold = {
      address: lb.address,
      poolId: lb.addressPoolId,
      tenantId: lb.tenantId,
      holdUntil: new Date(Date.now() + this.holdSeconds * 1000).toISOString(),
    };
    this.db.insert(addressHolds).values(hold).onConflictDoUpdate({ target: addressHolds.address, set: hold }).run();
  }

  /**
   * After an upgrade from before VIPs: every load balancer without one gets the lowest free address, oldest
   * first. Idempotent; returns how many got one and how many found no room (they stay without, logged).
   */
  backfill(): { assigned: number; unassigned: number } {
    return this.db.transaction(
      () => {
        const rows = this.db
          .select({ id: loadBalancers.id })
          .from(loadBalancers)
          .where(isNull(loadBalancers.address))
          .orderBy(loadBalancers.id)
          .all();
        let assigned = 0;
        for (const { id } of rows) {
          let vip: Vip;
          try {
            vip = this.lowestFree();
          } catch (err) {
            if (err instanceof ApiError) return { assigned, unassigned: rows.length - assigned };
            throw err;
          }
          this.db
            .update(loadBalancers)
            .set({ address: vip.address, addressPoolId: vip.poolId })
            .where(and(eq(loadBalancers.id, id), isNull(loadBalancers.address)))
            .run();
          assigned++;
        }
        return { assigned, unassigned: 0 };
      },
      { behavior: 'immediate' },
    );
  }
}

function addressInUse(address: string, why: string): ApiError {
  return new ApiError('address_in_use', `${address} is not available: ${why}`, [
    { path: '/body/address', message: 'not available' },
  ]);
}
