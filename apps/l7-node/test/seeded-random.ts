/**
 * Deterministic picks for generated test inputs: `rand(n)` is an integer in [0, n). mulberry32, not a plain LCG:
 * an LCG's consecutive picks modulo small counts are correlated, so a generator built on it paired a header name
 * with the same separator every time and never produced whole kinds of line.
 */
export function seededRandom(seed: number): (n: number) => number {
  let s = seed | 0;
  return (n: number) => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
}
