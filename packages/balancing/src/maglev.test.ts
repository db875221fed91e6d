import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildMaglevTable, type MaglevTable, maglevLookup } from './maglev.js';
import type { WeightedBackend } from './types.js';

const M = 65537;

function backends(n: number, weight = 1): WeightedBackend[] {
  return Array.from({ length: n }, (_, i) => ({ id: `srv-${i.toString(36).padStart(6, '0')}`, weight }));
}

function slotCounts(t: MaglevTable): Map<string, number> {
  const counts = new Map<string, number>();
  for (const s of t.slots) {
    const id = t.backendIds[s]!;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

function owners(t: MaglevTable): string[] {
  return Array.from(t.slots, (s) => t.backendIds[s]!);
}

/** Share of the slots that belonged to survivors (backends in both tables) whose owner changed. */
function survivorChurn(before: MaglevTable, after: MaglevTable): number {
  const survivors = new Set(after.backendIds);
  const a = owners(before);
  const b = owners(after);
  let owned = 0;
  let moved = 0;
  for (let i = 0; i < a.length; i++) {
    if (!survivors.has(a[i]!)) continue;
    owned++;
    if (a[i] !== b[i]) moved++;
  }
  return moved / owned;
}

function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let s = seed >>> 0 || 1;
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe('Maglev lookup table', () => {
  const thousand = backends(1000);
  const full = buildMaglevTable(thousand, { tableSize: M });

  it('fills every slot, and 1,000 equal backends hold 65 or 66 slots each (paper, M=65537)', () => {
    expect(full.slots.every((s) => s >= 0)).toBe(true);
    const counts = [...slotCounts(full).values()];
    expect(counts).toHaveLength(1000);
    expect(Math.min(...counts)).toBeGreaterThanOrEqual(65);
    expect(Math.max(...counts)).toBeLessThanOrEqual(66);
  });

  it('weights 1:2:3 give slot shares within one slot of 1/6, 2/6, 3/6', () => {
    const t = buildMaglevTable(
      [
        { id: 'srv-a', weight: 1 },
        { id: 'srv-b', weight: 2 },
        { id: 'srv-c', weight: 3 },
      ],
      { tableSize: M },
    );
    const counts = slotCounts(t);
    expect(Math.abs(counts.get('srv-a')! - M / 6)).toBeLessThanOrEqual(1);
    expect(Math.abs(counts.get('srv-b')! - (2 * M) / 6)).toBeLessThanOrEqual(1);
    expect(Math.abs(counts.get('srv-c')! - (3 * M) / 6)).toBeLessThanOrEqual(1);
  });

  it('removing one of 1,000 backends moves at most 1.5% of the survivors’ slots', () => {
    for (const removed of [0, 137, 999]) {
      const after = buildMaglevTable(
        thousand.filter((_, i) => i !== removed),
        { tableSize: M },
      );
      expect(survivorChurn(full, after)).toBeLessThanOrEqual(0.015);
      // The removed backend's own slots all went to survivors.
      expect(after.backendIds).not.toContain(thousand[removed]!.id);
    }
  });

  it('setting a weight to 0 is exactly a removal and does not reshuffle the others beyond that bound', () => {
    const zeroed = thousand.map((b, i) => (i === 500 ? { ...b, weight: 0 } : b));
    const t = buildMaglevTable(zeroed, { tableSize: M });
    const removed = buildMaglevTable(
      thousand.filter((_, i) => i !== 500),
      { tableSize: M },
    );
    expect(Buffer.from(t.slots.buffer).equals(Buffer.from(removed.slots.buffer))).toBe(true);
    expect(slotCounts(t).has(thousand[500]!.id)).toBe(false);
    expect(survivorChurn(full, t)).toBeLessThanOrEqual(0.015);
  });

  it('is byte-identical whatever order the backends arrive in (property)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 40 }),
        fc.array(fc.integer({ min: 0, max: 100 }), { minLength: 40, maxLength: 40 }),
        fc.integer(),
        (ids, weights, seed) => {
          const list = ids.map((id, i) => ({ id, weight: weights[i]! }));
          const a = buildMaglevTable(list, { tableSize: 1009 });
          const b = buildMaglevTable(shuffled(list, seed), { tableSize: 1009 });
          expect(b.backendIds).toEqual(a.backendIds);
          expect(Buffer.from(b.slots.buffer).equals(Buffer.from(a.slots.buffer))).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('gives every positive-weight backend slots in proportion to its weight, within one slot (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 100 }), { minLength: 1, maxLength: 20 }), (weights) => {
        const list = weights.map((weight, i) => ({ id: `srv-${i}`, weight }));
        const t = buildMaglevTable(list, { tableSize: 10007 });
        const counts = slotCounts(t);
        const total = weights.reduce((s, w) => s + w, 0);
        for (const b of list) {
          if (b.weight === 0) expect(counts.has(b.id)).toBe(false);
          else expect(Math.abs((counts.get(b.id) ?? 0) - (10007 * b.weight) / total)).toBeLessThan(1);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('is stable across calls and maps hashes to backend ids', () => {
    const again = buildMaglevTable(backends(1000), { tableSize: M });
    expect(Buffer.from(again.slots.buffer).equals(Buffer.from(full.slots.buffer))).toBe(true);
    expect(maglevLookup(full, 12345)).toBe(full.backendIds[full.slots[12345 % M]!]);
    expect(maglevLookup(buildMaglevTable([]), 1)).toBeUndefined();
  });

  it('rejects a non-prime size and duplicate ids', () => {
    expect(() => buildMaglevTable(backends(3), { tableSize: 65536 })).toThrow(/prime/);
    expect(() => buildMaglevTable([...backends(2), ...backends(1)])).toThrow(/duplicate/);
  });
});
