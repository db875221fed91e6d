import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyListenerDelta } from './delta.js';

/** The definition: remove, then upsert by id (the last upsert of an id wins), sorted by id. */
function reference(current: { id: string; v: number }[], upsert: { id: string; v: number }[], remove: string[]) {
  const map = new Map(current.filter((l) => !remove.includes(l.id)).map((l) => [l.id, l]));
  for (const l of upsert) map.set(l.id, l);
  return [...map.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

const item = fc.record({ id: fc.constantFrom(...'abcdefghij'.split('')), v: fc.integer() });

describe('applyListenerDelta', () => {
  it('matches the definition for sorted and unsorted bases, duplicates included', () => {
    fc.assert(
      fc.property(
        fc.array(item, { maxLength: 12 }),
        fc.array(item, { maxLength: 6 }),
        fc.array(fc.constantFrom(...'abcdefghijk'.split('')), { maxLength: 4 }),
        fc.boolean(),
        (base, upsert, remove, sortBase) => {
          const unique = [...new Map(base.map((l) => [l.id, l])).values()];
          const current = sortBase ? unique.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) : base;
          expect(applyListenerDelta(current, upsert, remove)).toEqual(reference(current, upsert, remove));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('chained deltas (patched in place of merged) still match the definition', () => {
    fc.assert(
      fc.property(
        fc.array(item, { maxLength: 12 }),
        fc.array(fc.tuple(fc.array(item, { maxLength: 4 }), fc.array(fc.constantFrom(...'abcdefghijk'.split('')))), {
          maxLength: 6,
        }),
        (base, deltas) => {
          let mine = applyListenerDelta(base, [], []);
          let theirs = reference(base, [], []);
          for (const [upsert, remove] of deltas) {
            mine = applyListenerDelta(mine, upsert, remove);
            theirs = reference(theirs, upsert, remove);
            expect(mine).toEqual(theirs);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('keeps untouched listeners as the very same objects', () => {
    const a = { id: 'a', v: 1 };
    const b = { id: 'b', v: 1 };
    const c = { id: 'c', v: 1 };
    const next = applyListenerDelta([a, b, c], [{ id: 'b', v: 2 }], ['c']);
    expect(next[0]).toBe(a);
    expect(next.map((l) => l.v)).toEqual([1, 2]);
  });
});
