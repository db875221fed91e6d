import { randomBytes } from 'node:crypto';
import { ID_PREFIX, type IdKind } from '@slb/model';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case

/**
 * `<prefix>-` + 10 chars of milliseconds + 10 random chars (50 bits). Ids sort by creation time, which
 * is what makes id-keyed cursor pagination return resources in creation order.
 */
export function newId(kind: IdKind, now: number = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(10);
  let rand = '';
  for (const b of bytes) rand += ALPHABET[b % 32];
  return `${ID_PREFIX[kind]}-${time}${rand}`;
}
