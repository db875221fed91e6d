import { describe, expect, it } from 'vitest';
import { lowestFree, lowestFreeOffset, MAX_POOL_CAPACITY, networksOverlap, poolRange } from './address-range.js';
import { formatIp, parseNetwork } from './ip-address.js';

const net = (cidr: string) => parseNetwork(cidr)!;
const ip = (family: 4 | 6, value: bigint) => formatIp({ family, value });

describe('poolRange', () => {
  it.each([
    ['10.0.0.0/30', '10.0.0.1', '10.0.0.2', 2n],
    ['10.0.0.0/24', '10.0.0.1', '10.0.0.254', 254n],
    ['127.1.0.0/16', '127.1.0.1', '127.1.255.254', 65534n],
    ['10.0.0.0/31', '10.0.0.0', '10.0.0.1', 2n],
    ['10.0.0.7/32', '10.0.0.7', '10.0.0.7', 1n],
  ])('%s hands out %s to %s (%d)', (cidr, first, last, capacity) => {
    const range = poolRange(net(cidr));
    expect(ip(4, range.first)).toBe(first);
    expect(ip(4, range.last)).toBe(last);
    expect(range.capacity).toBe(capacity);
  });

  it('IPv6: skips the subnet-router anycast address and caps the count', () => {
    const range = poolRange(net('2001:db8::/64'));
    expect(ip(6, range.first)).toBe('2001:db8::1');
    expect(range.capacity).toBe(MAX_POOL_CAPACITY);
    expect(poolRange(net('2001:db8::/126')).capacity).toBe(3n);
  });
});

describe('networksOverlap', () => {
  it.each([
    ['10.0.0.0/8', '10.1.0.0/16', true],
    ['10.1.0.0/16', '10.0.0.0/8', true],
    ['10.0.0.0/24', '10.0.1.0/24', false],
    ['10.0.0.0/8', '::/0', false],
    ['2001:db8::/32', '2001:db8:1::/48', true],
  ])('%s and %s: %s', (a, b, overlap) => {
    expect(networksOverlap(net(a), net(b))).toBe(overlap);
  });
});

describe('lowestFree', () => {
  it('the first gap, whatever the order of the taken values', () => {
    expect(lowestFree(10n, 5n, [])).toBe(10n);
    expect(lowestFree(10n, 5n, [12n, 10n, 11n, 3n, 99n])).toBe(13n);
    expect(lowestFree(10n, 5n, [11n, 11n])).toBe(10n);
  });

  it('null when all are taken', () => {
    expect(lowestFree(10n, 3n, [10n, 11n, 12n])).toBeNull();
    expect(lowestFree(10n, 0n, [])).toBeNull();
  });
});

describe('lowestFreeOffset', () => {
  /** The function's answer for a set of taken offsets, and how many offsets its counts went over. */
  function search(capacity: number, taken: number[]) {
    const sorted = [...new Set(taken)].sort((a, b) => a - b);
    let counted = 0;
    const takenIn = (lo: number, hi: number) => {
      const n = sorted.filter((o) => o >= lo && o <= hi).length;
      counted += n;
      return n;
    };
    const free = lowestFreeOffset(capacity, sorted.length, sorted.at(-1) ?? null, takenIn);
    return { free, counted };
  }

  it('a dense pool: highest + 1 with no count at all', () => {
    expect(search(10, [])).toEqual({ free: 0, counted: 0 });
    expect(search(10, [0, 1, 2, 3])).toEqual({ free: 4, counted: 0 });
    expect(search(4, [0, 1, 2, 3])).toEqual({ free: null, counted: 0 });
    expect(search(0, [])).toEqual({ free: null, counted: 0 });
  });

  it('a gap: the lowest one, from about twice the taken offsets counted', () => {
    const taken = Array.from({ length: 1000 }, (_, i) => i).filter((i) => i !== 700 && i !== 701 && i !== 950);
    const { free, counted } = search(5000, taken);
    expect(free).toBe(700);
    expect(counted).toBeLessThanOrEqual(2 * taken.length);
    expect(search(5000, [0, 1, 9]).free).toBe(2);
    expect(search(5000, [4000]).free).toBe(0);
  });

  it('agrees with lowestFree on random pools', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let round = 0; round < 300; round++) {
      const capacity = 1 + Math.floor(random() * 64);
      const taken = Array.from({ length: Math.floor(random() * capacity * 1.2) }, () =>
        Math.floor(random() * capacity),
      );
      const expected = lowestFree(0n, BigInt(capacity), taken.map(BigInt));
      expect(search(capacity, taken).free).toBe(expected === null ? null : Number(expected));
    }
  });
});
