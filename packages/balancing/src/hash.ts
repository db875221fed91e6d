// Deterministic 32-bit hashes. Every node must compute the same values for the same input, whatever the
// platform, so nothing here depends on Math.random, object identity or locale.

/** murmur3's finaliser: spreads FNV's weak low bits so `% M` uses the whole word. */
export function fmix32(h: number): number {
  let x = h;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

const FNV_PRIME = 0x01000193;
const FNV_OFFSET = 0x811c9dc5;

/** FNV-1a over UTF-16 code units, mixed. Allocation-free, so it is usable per packet. */
export function hashString(s: string, seed = 0): number {
  let h = (FNV_OFFSET ^ seed) >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  return fmix32(h);
}

/** Folds a 32-bit integer into a running hash. */
export function hashCombine(h: number, v: number): number {
  let x = (h ^ (v >>> 0)) >>> 0;
  x = Math.imul(x, FNV_PRIME);
  return fmix32(x ^ (x >>> 15));
}

/** Source-address hash (the `sch` scheduler): all connections of one client land together. */
export function hashSource(flow: { readonly srcAddr: string }): number {
  return hashString(flow.srcAddr, 0x5eed);
}

/** 4-tuple hash (the `tch` scheduler and the conntrack fallback). */
export function hashFourTuple(flow: {
  readonly srcAddr: string;
  readonly srcPort: number;
  readonly dstAddr: string;
  readonly dstPort: number;
}): number {
  let h = hashString(flow.srcAddr, 0x4c4);
  h = hashCombine(h, flow.srcPort);
  h = hashCombine(h, hashString(flow.dstAddr, 0x4c5));
  return hashCombine(h, flow.dstPort);
}
