import type { Store } from '@slb/db';
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
import { countWith, poolAddressCount } from './usage-counts.js';

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
 * Hands out load balancers' VIPs. Called inside the caller's write, whose lock of the allocation (Store.lock)
 * it holds until the insert commits, so replicas pick one after another. The unique index on
 * load_balancers.address is the second line.
 */
export class VipAllocator {
  constructor(
    private readonly store: Store,
    private readonly pools: AddressPoolService,
    private readonly holdSeconds = DEFAULT_VIP_HOLD_SECONDS,
  ) {}

  async allocate(tenantId: string, requested?: string): Promise<Vip> {
    const { t } = this.store;
    await this.lockPicks();
    await this.store.write((q) => q.delete(t.addressHolds).where(lte(t.addressHolds.holdUntil, nowIso())));
    return requested === undefined ? this.lowestFree() : this.claim(tenantId, requested);
  }

  /**
   * One pick at a time across replicas, each held until its write commits: concurrent picks would read the
   * same lowest free address.
   */
  private lockPicks(): Promise<void> {
    return this.store.lock('vip-allocation');
  }

  /** A specific address: free, or held for this very tenant (it takes its old VIP back). */
  private async claim(tenantId: string, requested: string): Promise<Vip> {
    const { t } = this.store;
    const ip = parseIp(requested);
    if (ip === null || ip.zone !== null) throw unprocessable('/address', 'must be an IPv4 or IPv6 address (no zone)');
    const address = formatIp(ip);
    const pool = (await this.pools.all()).find((p) => networkContains(networkOf(p), ip));
    if (!pool) throw unprocessable('/address', `${address} is in no address pool`);
    const range = poolRange(networkOf(pool));
    if (!inPoolRange(range, ip)) {
      throw unprocessable('/address', `${address} is a reserved address of pool ${pool.id} (${pool.cidr})`);
    }
    return this.store.write(async (q) => {
      const [holder] = await q
        .select({ id: t.loadBalancers.id })
        .from(t.loadBalancers)
        .where(eq(t.loadBalancers.address, address));
      if (holder) throw addressInUse(address, 'another load balancer has it');
      const [hold] = await q.select().from(t.addressHolds).where(eq(t.addressHolds.address, address));
      if (hold && hold.tenantId !== tenantId) {
        throw addressInUse(address, `it is held until ${hold.holdUntil} after its load balancer was deleted`);
      }
      if (hold) await q.delete(t.addressHolds).where(eq(t.addressHolds.address, address));
      return { address, poolId: pool.id, offset: Number(ip.value - range.first) };
    });
  }

  /** The lowest address nobody holds, over the pools in creation order. */
  private async lowestFree(): Promise<Vip> {
    const pools = await this.pools.all();
    for (const pool of pools) {
      const range = poolRange(networkOf(pool));
      const offset = await this.freeOffset(pool.id, range);
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
  private async freeOffset(poolId: string, range: PoolRange): Promise<number | null> {
    const { t } = this.store;
    const held = (
      await this.store.read((q) =>
        q.select({ address: t.addressHolds.address }).from(t.addressHolds).where(eq(t.addressHolds.poolId, poolId)),
      )
    )
      .flatMap(({ address }) => offsetIn(range, address) ?? [])
      .sort((x, y) => x - y);
    const vipCount = await poolAddressCount(this.store, poolId);
    const highestVip =
      vipCount === 0
        ? -1
        : await countWith(
            this.store,
            sql`SELECT max(address_offset) AS n FROM load_balancers WHERE address_pool_id = ${poolId}`,
          );
    const highest = Math.max(highestVip, held.at(-1) ?? -1);
    const taken = vipCount + held.length;
    // lowestFreeOffset (pure) halves [0, highest] by counts; the counts are queries here, so it is replayed
    // with each count it asked for fetched, about log2(highest) times.
    const counts = new Map<string, number>();
    const vipsIn = (lo: number, hi: number) =>
      countWith(
        this.store,
        sql`SELECT count(*) AS n FROM load_balancers
            WHERE address_pool_id = ${poolId} AND address_offset BETWEEN ${lo} AND ${hi}`,
      );
    for (;;) {
      let missing: [number, number] | undefined;
      const offset = lowestFreeOffset(Number(range.capacity), taken, highest < 0 ? null : highest, (lo, hi) => {
        const known = counts.get(`${lo}:${hi}`);
        if (known !== undefined) return known + held.filter((o) => o >= lo && o <= hi).length;
        // The halving's path up to its first unknown count is settled: fetch that count and replay.
        missing ??= [lo, hi];
        return Number.POSITIVE_INFINITY;
      });
      if (missing === undefined) return offset;
      const [lo, hi] = missing;
      counts.set(`${lo}:${hi}`, await vipsIn(lo, hi));
    }
  }

  /** A deleted load balancer's VIP stays its tenant's for holdSeconds. */
  async hold(lb: { address: string | null; addressPoolId: string | null; tenantId: string }): Promise<void> {
    if (lb.address === null || lb.addressPoolId === null || this.holdSeconds <= 0) return;
    const { t } = this.store;
    const hold = {
      address: lb.address,
      poolId: lb.addressPoolId,
      tenantId: lb.tenantId,
      holdUntil: new Date(Date.now() + this.holdSeconds * 1000).toISOString(),
    };
    await this.store.write((q) =>
      q.insert(t.addressHolds).values(hold).onConflictDoUpdate({ target: t.addressHolds.address, set: hold }),
    );
  }

  /**
   * After an upgrade from before VIPs: every load balancer without one gets the lowest free address, oldest
   * first. Idempotent; returns how many got one and how many found no room (they stay without, logged).
   */
  backfill(): Promise<{ assigned: number; unassigned: number }> {
    const { t } = this.store;
    return this.store.write(async (q) => {
      await this.lockPicks();
      await this.backfillOffsets();
      const rows = await q
        .select({ id: t.loadBalancers.id })
        .from(t.loadBalancers)
        .where(isNull(t.loadBalancers.address))
        .orderBy(t.loadBalancers.id);
      let assigned = 0;
      for (const { id } of rows) {
        let vip: Vip;
        try {
          vip = await this.lowestFree();
        } catch (err) {
          if (err instanceof ApiError) return { assigned, unassigned: rows.length - assigned };
          throw err;
        }
        await q
          .update(t.loadBalancers)
          .set({ address: vip.address, addressPoolId: vip.poolId, addressOffset: vip.offset })
          .where(and(eq(t.loadBalancers.id, id), isNull(t.loadBalancers.address)));
        assigned++;
      }
      return { assigned, unassigned: 0 };
    });
  }

  /**
   * After an upgrade from before address_offset (migrations/0015): each VIP's place in its pool. (A VIP
   * outside its pool's range cannot be: pools never change their CIDR. It would keep no offset, and the
   * allocator, which hands out only offsets in the range, could not give its address again.)
   */
  private async backfillOffsets(): Promise<void> {
    const { t } = this.store;
    const rows = await this.store.read((q) =>
      q
        .select({ id: t.loadBalancers.id, address: t.loadBalancers.address, poolId: t.loadBalancers.addressPoolId })
        .from(t.loadBalancers)
        .where(and(isNotNull(t.loadBalancers.address), isNull(t.loadBalancers.addressOffset))),
    );
    if (rows.length === 0) return;
    const ranges = new Map((await this.pools.all()).map((p) => [p.id, poolRange(networkOf(p))]));
    await this.store.write(async (q) => {
      for (const { id, address, poolId } of rows) {
        const range = poolId === null ? undefined : ranges.get(poolId);
        const offset = range && address !== null ? offsetIn(range, address) : null;
        if (offset !== null) {
          await q.update(t.loadBalancers).set({ addressOffset: offset }).where(eq(t.loadBalancers.id, id));
        }
      }
    });
  }
}

function addressInUse(address: string, why: string): ApiError {
  return new ApiError('address_in_use', `${address} is not available: ${why}`, [
    { path: '/body/address', message: 'not available' },
  ]);
}
