import { addressHolds, type Db, loadBalancers } from '@slb/db';
import {
  formatIp,
  inPoolRange,
  lowestFreeOffset,
  networkContains,
  type PoolRange,
  parseIp,
  poolRange,
} from '@slb/model';
import { and, eq, isNotNull, isNull, lte, sql } from 'drizzle-orm';
import { ApiError, unprocessable } from '../errors.js';
import { type AddressPoolService, networkOf } from './address-pools.js';
import { nowIso } from './common.js';
import { poolAddressCount } from './usage-counts.js';

/** How long a deleted load balancer's VIP is kept from other tenants by default (SLB_VIP_HOLD_SECONDS). */
export const DEFAULT_VIP_HOLD_SECONDS = 300;

export interface Vip {
  address: string;
  poolId: string;
  /** Its place in the pool's range (load_balancers.address_offset). */
  offset: number;
}

/** An address's place in a pool's range, or null when it is not in the range (or not an address). */
function offsetIn(range: PoolRange, address: string): number | null {
  const ip = parseIp(address);
  return ip !== null && inPoolRange(range, ip) ? Number(ip.value - range.first) : null;
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
    const range = poolRange(networkOf(pool));
    if (!inPoolRange(range, ip)) {
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
    return { address, poolId: pool.id, offset: Number(ip.value - range.first) };
  }

  /** The lowest address nobody holds, over the pools in creation order. */
  private lowestFree(): Vip {
    const pools = this.pools.all();
    for (const pool of pools) {
      const range = poolRange(networkOf(pool));
      const offset = this.freeOffset(pool.id, range);
      if (offset !== null) {
        return {
          address: formatIp({ family: range.family, value: range.first + BigInt(offset) }),
          poolId: pool.id,
          offset,
        };
      }
    }
    const named = pools.map((p) => `${p.id} (${p.cidr})`).join(', ');
    throw new ApiError(
      'address_pool_exhausted',
      pools.length === 0
        ? 'there is no address pool to allocate a VIP from: an admin adds one with POST /v1/address-pools'
        : `every address pool is full: ${named}; an admin adds a pool, or a load balancer is deleted (its VIP is free once its hold ends)`,
    );
  }

  /**
   * The pool's lowest offset that no load balancer and no hold has. The load balancers' side is read from
   * the pool's kept count and index (highest offset, counts of a range), never row by row: a create in a
   * pool of 10,000 VIPs parsed and sorted all 10,000 (9-21 ms). Holds are few (deletes of the last
   * SLB_VIP_HOLD_SECONDS) and read whole.
   */
  private freeOffset(poolId: string, range: PoolRange): number | null {
    const held = this.db
      .select({ address: addressHolds.address })
      .from(addressHolds)
      .where(eq(addressHolds.poolId, poolId))
      .all()
      .flatMap(({ address }) => offsetIn(range, address) ?? [])
      .sort((x, y) => x - y);
    const highestVip = this.db.get<{ max: number | null }>(
      sql`SELECT max(address_offset) AS max FROM load_balancers WHERE address_pool_id = ${poolId}`,
    ).max;
    const highest = Math.max(highestVip ?? -1, held.at(-1) ?? -1);
    const vipsIn = (lo: number, hi: number) =>
      this.db.get<{ n: number }>(
        sql`SELECT count(*) AS n FROM load_balancers
            WHERE address_pool_id = ${poolId} AND address_offset BETWEEN ${lo} AND ${hi}`,
      ).n;
    const heldIn = (lo: number, hi: number) => held.filter((o) => o >= lo && o <= hi).length;
    return lowestFreeOffset(
      Number(range.capacity),
      poolAddressCount(this.db, poolId) + held.length,
      highest < 0 ? null : highest,
      (lo, hi) => vipsIn(lo, hi) + heldIn(lo, hi),
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
        this.backfillOffsets();
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
            .set({ address: vip.address, addressPoolId: vip.poolId, addressOffset: vip.offset })
            .where(and(eq(loadBalancers.id, id), isNull(loadBalancers.address)))
            .run();
          assigned++;
        }
        return { assigned, unassigned: 0 };
      },
      { behavior: 'immediate' },
    );
  }

  /**
   * After an upgrade from before address_offset (migrations/0015): each VIP's place in its pool. (A VIP
   * outside its pool's range cannot be: pools never change their CIDR. It would keep no offset, and the
   * allocator, which hands out only offsets in the range, could not give its address again.)
   */
  private backfillOffsets(): void {
    const rows = this.db
      .select({ id: loadBalancers.id, address: loadBalancers.address, poolId: loadBalancers.addressPoolId })
      .from(loadBalancers)
      .where(and(isNotNull(loadBalancers.address), isNull(loadBalancers.addressOffset)))
      .all();
    if (rows.length === 0) return;
    const ranges = new Map(this.pools.all().map((p) => [p.id, poolRange(networkOf(p))]));
    for (const { id, address, poolId } of rows) {
      const range = poolId === null ? undefined : ranges.get(poolId);
      const offset = range && address !== null ? offsetIn(range, address) : null;
      if (offset !== null)
        this.db.update(loadBalancers).set({ addressOffset: offset }).where(eq(loadBalancers.id, id)).run();
    }
  }
}

function addressInUse(address: string, why: string): ApiError {
  return new ApiError('address_in_use', `${address} is not available: ${why}`, [
    { path: '/body/address', message: 'not available' },
  ]);
}
