// Which addresses of a VIP pool can be handed out, and the lowest one nobody holds: pure, so the API's
// allocation and the tests agree without a database.
import { type IpFamily, type IpNetwork, networkContains } from './ip-address.js';

/**
 * At most this many addresses of one pool are counted and scanned: an IPv6 /64 has 2^64, which no count
 * or scan should try to reach, and no fleet runs more load balancers than this.
 */
export const MAX_POOL_CAPACITY = 2n ** 32n;

/** The addresses a pool hands out: `first` to `first + capacity - 1`. */
export interface PoolRange {
  family: IpFamily;
  first: bigint;
  last: bigint;
  capacity: bigint;
}

const BITS: Record<IpFamily, number> = { 4: 32, 6: 128 };

/**
 * The usable addresses of a network. IPv4 prefixes shorter than /31 lose the network and broadcast
 * addresses (RFC 3021 makes both ends of a /31 hosts); IPv6 prefixes shorter than /127 lose the all-zeros
 * address, the subnet-router anycast address (RFC 4291 2.6.1), which routers answer. Capped at
 * MAX_POOL_CAPACITY.
 */
export function poolRange(network: IpNetwork): PoolRange {
  const size = 1n << BigInt(BITS[network.family] - network.prefix);
  let first = network.value;
  let last = network.value + size - 1n;
  if (network.family === 4 && network.prefix < 31) {
    first += 1n;
    last -= 1n;
  }
  if (network.family === 6 && network.prefix < 127) first += 1n;
  const count = last - first + 1n;
  const capacity = count < MAX_POOL_CAPACITY ? count : MAX_POOL_CAPACITY;
  return { family: network.family, first, last, capacity };
}

/** Whether two networks share any address: one contains the other's first address. */
export function networksOverlap(a: IpNetwork, b: IpNetwork): boolean {
  return networkContains(a, b) || networkContains(b, a);
}

/** Whether an address (of the network's family) is one the pool can hand out, the cap aside. */
export function inPoolRange(range: PoolRange, address: { family: IpFamily; value: bigint }): boolean {
  return address.family === range.family && address.value >= range.first && address.value <= range.last;
}

/**
 * The lowest value in [first, first + count) absent from `taken`, or null when every one is taken.
 * `taken` may hold values outside the interval and duplicates; it is read once, in order (sorted here).
 */
export function lowestFree(first: bigint, count: bigint, taken: Iterable<bigint>): bigint | null {
  const sorted = [...taken].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
  const end = first + count;
  let candidate = first;
  for (const value of sorted) {
    if (value < candidate) continue;
    if (value > candidate) break;
    candidate += 1n;
  }
  return candidate < end ? candidate : null;
}

/**
 * The lowest free offset of a pool of `capacity` addresses (offset 0 is its first usable one), or null when
 * all are taken, found from counts rather than from every taken offset: `taken` offsets in all, the
 * highest `highest` (null for none), and `takenIn(lo, hi)` counting those in [lo, hi]. Offsets go out
 * lowest first, so a pool is most often dense (taken = highest + 1) and the answer is highest + 1 without
 * a count; a gap (a VIP given back, an address asked for by name) is found by halving [0, highest], about
 * twice the taken offsets counted in all.
 */
export function lowestFreeOffset(
  capacity: number,
  taken: number,
  highest: number | null,
  takenIn: (lo: number, hi: number) => number,
): number | null {
  if (highest === null || taken > highest) {
    const next = highest === null ? 0 : highest + 1;
    return next < capacity ? next : null;
  }
  let lo = 0;
  let hi = highest;
  while (lo < hi) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (takenIn(lo, mid) < mid - lo + 1) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
