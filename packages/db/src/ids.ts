import { randomBytes } from 'node:crypto';
import { ID_PREFIX, type IdKind } from '@slb/model';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case
const RANDOM_BITS = 50n;

let lastTime = 0;
let lastRandom = 0n;

function base32(value: bigint, length: number): string {
  let out = '';
  let v = value;
  for (let i = 0; i < length; i++) {
    out = ALPHABET[Number(v & 31n)] + out;
    v >>= 5n;
  }
  return out;
}

/**
 * `<prefix>-` + 10 chars of milliseconds + 10 chars (50 bits) of randomness, monotonic within a process
 * (as ULID's monotonic mode: ids made in the same millisecond increment). Ids sort by creation time,
 * which is what makes id-keyed cursor pagination return resources in creation order.
 */
export function newId(kind: IdKind, now: number = Date.now()): string {
  let random: bigint;
  if (now <= lastTime) {
    random = lastRandom + 1n + (BigInt(randomBytes(1)[0]!) & 15n);
    if (random >> RANDOM_BITS) {
      lastTime += 1; // the random half overflowed: borrow the next millisecond
      random = 0n;
    }
  } else {
    lastTime = now;
    random = BigInt(`0x${randomBytes(7).toString('hex')}`) >> 6n; // 50 bits
  }
  lastRandom = random;
  return `${ID_PREFIX[kind]}-${base32(BigInt(lastTime), 10)}${base32(random, 10)}`;
}

/**
 * The smallest id `newId(kind)` can give at `ms`: ids made before `ms` sort below it, so an age cutoff on a
 * table keyed by such ids is a primary-key range.
 */
export function firstIdAt(kind: IdKind, ms: number): string {
  return `${ID_PREFIX[kind]}-${base32(BigInt(Math.max(0, Math.floor(ms))), 10)}${'0'.repeat(10)}`;
}
