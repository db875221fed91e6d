import { hashString } from './hash.js';
import type { WeightedBackend } from './types.js';

/** Options of {@link buildMaglevTable}. */
export interface MaglevOptions {
  /** Lookup table size; must be prime and larger than the backend count. Default 65537 (Maglev paper). */
  readonly tableSize?: number;
}

export const DEFAULT_MAGLEV_TABLE_SIZE = 65537;

/** A built lookup table: `slots[i]` is an index into `backendIds`, or -1 when there is no backend. */
export interface MaglevTable {
  readonly size: number;
  /** Backend ids in the canonical (sorted) order the table refers to. */
  readonly backendIds: readonly string[];
  readonly slots: Int32Array;
}

// Two independent seeds give each backend its own (offset, skip) permutation of the slots.
const OFFSET_SEED = 0x0ff5e7;
const SKIP_SEED = 0x5c1b;

function isPrime(n: number): boolean {
  if (n < 2 || !Number.isInteger(n)) return false;
  if (n % 2 === 0) return n === 2;
  for (let d = 3; d * d <= n; d += 2) if (n % d === 0) return false;
  return true;
}

function compareIds(a: WeightedBackend, b: WeightedBackend): number {
  // Code-unit order, not localeCompare: the table must not depend on the host's locale.
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * Builds a Maglev lookup table (Eisenbud et al., NSDI 2016, "Pseudo-code 1"), extended with weights.
 *
 * Backends are sorted by id first (as Katran does) so every node builds a byte-identical table for the same
 * set whatever order it was listed in. Weight 0 backends own no slots. Weights use credits: in every round
 * each backend earns its weight and claims one slot per `maxWeight` credits, until it holds its quota (see
 * `apportion`), so shares follow the weights to within one slot; equal weights reduce to the paper's
 * algorithm.
 * Cost is O(M log M) on average; build it when the backend set changes, never per packet.
 */
export function buildMaglevTable(backends: readonly WeightedBackend[], options: MaglevOptions = {}): MaglevTable {
  const size = options.tableSize ?? DEFAULT_MAGLEV_TABLE_SIZE;
  if (!isPrime(size)) throw new RangeError(`Maglev table size must be prime, got ${size}`);
  const live = backends.filter((b) => b.weight > 0).sort(compareIds);
  for (let i = 1; i < live.length; i++) {
    if (live[i]!.id === live[i - 1]!.id) throw new RangeError(`duplicate backend id ${live[i]!.id}`);
  }
  if (live.length >= size) throw new RangeError(`Maglev table size ${size} must exceed backend count ${live.length}`);
  const slots = new Int32Array(size).fill(-1);
  const backendIds = live.map((b) => b.id);
  const n = live.length;
  if (n === 0) return { size, backendIds, slots };

  const position = new Int32Array(n); // next candidate slot of each backend's permutation
  const skip = new Int32Array(n);
  const weight = new Float64Array(n);
  const credit = new Float64Array(n);
  const owned = new Int32Array(n);
  const quota = apportion(live, size);
  let maxWeight = 0;
  for (let i = 0; i < n; i++) {
    const b = live[i]!;
    position[i] = hashString(b.id, OFFSET_SEED) % size;
    skip[i] = (hashString(b.id, SKIP_SEED) % (size - 1)) + 1;
    weight[i] = b.weight;
    if (b.weight > maxWeight) maxWeight = b.weight;
  }

  let filled = 0;
  while (filled < size) {
    for (let i = 0; i < n && filled < size; i++) {
      if (owned[i]! >= quota[i]!) continue;
      credit[i] = credit[i]! + weight[i]!;
      if (credit[i]! < maxWeight) continue;
      credit[i] = credit[i]! - maxWeight;
      let p = position[i]!;
      const s = skip[i]!;
      while (slots[p] !== -1) {
        p += s;
        if (p >= size) p -= size;
      }
      slots[p] = i;
      p += s;
      position[i] = p >= size ? p - size : p;
      owned[i] = owned[i]! + 1;
      filled++;
    }
  }
  return { size, backendIds, slots };
}

/**
 * Slot quotas by the largest-remainder method: each backend gets floor(M·w/W) slots and the leftover slots
 * go to the largest remainders (ties to the earlier id). Capping the credit rounds at these quotas keeps
 * every share within one slot of its exact weight share, which rounds alone cannot promise when the table
 * fills mid-round.
 */
function apportion(live: readonly WeightedBackend[], size: number): Int32Array {
  const total = live.reduce((sum, b) => sum + b.weight, 0);
  const quota = new Int32Array(live.length);
  const remainder = new Float64Array(live.length);
  let given = 0;
  for (let i = 0; i < live.length; i++) {
    const exact = (size * live[i]!.weight) / total;
    quota[i] = Math.floor(exact);
    remainder[i] = exact - quota[i]!;
    given += quota[i]!;
  }
  const order = Array.from(live, (_, i) => i).sort((a, b) => remainder[b]! - remainder[a]! || a - b);
  for (let k = 0; given < size; k++, given++) {
    const i = order[k % order.length]!;
    quota[i] = quota[i]! + 1;
  }
  return quota;
}

/** The backend id a 32-bit hash maps to, or undefined for an empty table. */
export function maglevLookup(table: MaglevTable, hash: number): string | undefined {
  const idx = table.slots[(hash >>> 0) % table.size]!;
  return idx < 0 ? undefined : table.backendIds[idx];
}
