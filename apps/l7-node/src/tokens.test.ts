import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../test/seeded-random.js';
import { bytesMatch, hasToken, isName } from './tokens.js';

// The rule these replace on the fast path: lower-case the name (or each trimmed list element) and compare.
const trimOws = (v: string) => v.replace(/^[ \t]+|[ \t]+$/g, '');
const referenceIsName = (name: string, lower: string) => name.toLowerCase() === lower;
const referenceHasToken = (list: string, token: string) =>
  list
    .split(',')
    .map((t) => trimOws(t).toLowerCase())
    .includes(token);

/** Deterministic strings from pieces on the rule's edges: case, separators, bytes that differ by 0x20. */
function* generated(count: number): Generator<string> {
  const rand = seededRandom(0x70c3);
  const pieces = ['close', 'CLOSE', 'Close', 'cLoSe', 'keep-alive', 'Keep-Alive', 'keep\ralive', 'upgrade', 'x'];
  const glue = [',', ', ', ' ,', '\t,\t', ',,', ' ', '', '\r', 'M'];
  for (let k = 0; k < count; k++) {
    let s = '';
    const n = 1 + rand(4);
    for (let i = 0; i < n; i++) s += (i > 0 ? glue[rand(glue.length)]! : '') + pieces[rand(pieces.length)]!;
    if (rand(4) === 0) s = ` ${s}\t`;
    yield s;
  }
}

describe('isName', () => {
  it('matches a name in any ASCII letter case and nothing else', () => {
    expect(isName('Content-Length', 'content-length')).toBe(true);
    expect(isName('CONTENT-LENGTH', 'content-length')).toBe(true);
    expect(isName('content-lengtH', 'content-length')).toBe(true);
    expect(isName('Content-Lengths', 'content-length')).toBe(false);
    expect(isName('Content-Lengt', 'content-length')).toBe(false);
    // 0x0d | 0x20 is '-', 0x0b | 0x20 is '+': only A-Z fold onto their lower case.
    expect(isName('content\rlength', 'content-length')).toBe(false);
    expect(isName('a\x0bb', 'a+b')).toBe(false);
    // 'K' (0x4b) + 0x20 is 'k', but '[' (0x5b) + 0x20 is '{': outside A-Z nothing folds.
    expect(isName('[', '{')).toBe(false);
  });

  it('agrees with lower-casing on generated names', () => {
    for (const name of generated(3000))
      for (const lower of ['close', 'keep-alive', 'keep\ralive', 'x'])
        expect(isName(name, lower), `${JSON.stringify(name)} vs ${lower}`).toBe(referenceIsName(name, lower));
  });
});

describe('bytesMatch', () => {
  it('agrees with lower-casing on the bytes of generated names, at an offset inside a larger buffer', () => {
    for (const name of generated(3000))
      for (const lower of ['close', 'keep-alive', 'keep\ralive', 'x']) {
        if (name.length !== lower.length) continue;
        const buf = Buffer.from(`ab${name}cd`, 'latin1');
        expect(bytesMatch(buf, 2, lower), `${JSON.stringify(name)} vs ${lower}`).toBe(referenceIsName(name, lower));
      }
    // Past the buffer's end nothing matches.
    expect(bytesMatch(Buffer.from('clo', 'latin1'), 0, 'close')).toBe(false);
  });
});

describe('hasToken', () => {
  it('finds a token among comma-separated elements trimmed of SP and HTAB', () => {
    expect(hasToken('close', 'close')).toBe(true);
    expect(hasToken('Keep-Alive, Close', 'close')).toBe(true);
    expect(hasToken(' close\t,x', 'close')).toBe(true);
    expect(hasToken('closed', 'close')).toBe(false);
    expect(hasToken('x close', 'close')).toBe(false);
    expect(hasToken('', 'close')).toBe(false);
    expect(hasToken(',,', 'close')).toBe(false);
  });

  it('agrees with splitting, trimming and lower-casing on generated lists', () => {
    for (const list of generated(5000))
      for (const token of ['close', 'keep-alive', 'upgrade'])
        expect(hasToken(list, token), `${JSON.stringify(list)} has ${token}`).toBe(referenceHasToken(list, token));
  });
});
