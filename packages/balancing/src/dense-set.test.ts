import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DenseSet } from './dense-set.js';

interface Member {
  id: number;
  slotA: number;
  slotB: number;
}

const member = (id: number): Member => ({ id, slotA: -1, slotB: -1 });
const inA = () =>
  new DenseSet<Member>({
    get: (m) => m.slotA,
    set: (m, i) => {
      m.slotA = i;
    },
  });
const inB = () =>
  new DenseSet<Member>({
    get: (m) => m.slotB,
    set: (m, i) => {
      m.slotB = i;
    },
  });

describe('DenseSet', () => {
  it('behaves as a Set under any sequence of adds and deletes', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 15 })), { maxLength: 300 }), (ops) => {
        const members = Array.from({ length: 16 }, (_, i) => member(i));
        const dense = inA();
        const reference = new Set<Member>();
        for (const [add, id] of ops) {
          const m = members[id]!;
          if (add) {
            dense.add(m);
            reference.add(m);
          } else {
            expect(dense.delete(m)).toBe(reference.delete(m));
          }
          expect(dense.size).toBe(reference.size);
        }
        for (const m of members) expect(dense.has(m)).toBe(reference.has(m));
        expect(new Set(dense)).toEqual(reference);
        // A member outside the set says so on its slot.
        for (const m of members) if (!reference.has(m)) expect(m.slotA).toBe(-1);
      }),
    );
  });

  it('keeps one member in two sets apart, each on its own slot', () => {
    const a = inA();
    const b = inB();
    const m = [member(0), member(1), member(2)];
    for (const x of m) a.add(x);
    b.add(m[2]!);
    b.add(m[0]!);
    expect(a.delete(m[0]!)).toBe(true);
    expect(b.has(m[0]!)).toBe(true);
    expect(a.has(m[0]!)).toBe(false);
    expect([...b].map((x) => x.id).sort()).toEqual([0, 2]);
    expect([...a].map((x) => x.id).sort()).toEqual([1, 2]);
  });

  it('iterates over the members as they were, whatever the loop adds or removes', () => {
    const s = inA();
    const m = Array.from({ length: 5 }, (_, i) => member(i));
    for (const x of m) s.add(x);
    const seen: number[] = [];
    for (const x of s) {
      seen.push(x.id);
      s.delete(x);
      if (x.id === 0) s.delete(m[4]!);
      s.add(member(100 + x.id));
    }
    expect(seen.sort()).toEqual([0, 1, 2, 3, 4]);
    expect(s.size).toBe(5);
  });

  it('holds no reference to a member it no longer holds', () => {
    const s = inA();
    const m = Array.from({ length: 4 }, (_, i) => member(i));
    for (const x of m) s.add(x);
    for (const x of m) s.delete(x);
    s.add(m[1]!);
    // The backing array is what the set refers to: only the member still in it.
    const held = (s as unknown as { members: Member[] }).members;
    expect(held).toEqual([m[1]]);
    expect(held.length).toBe(1);
  });
});
