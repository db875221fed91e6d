import { describe, expect, it } from 'vitest';
import { ReadBuffer, SMALL_READS_TO_SHRINK } from './read-buffer.js';

describe('ReadBuffer', () => {
  it('grows when a read fills it, shrinks after a run of small reads, and moves on while bytes are held', () => {
    const r = new ReadBuffer(4096, 65536);
    const first = r.current;
    expect(first.length).toBe(4096);
    expect(r.afterRead(100, false)).toBe(first);
    const big = r.afterRead(4096, false);
    expect(big.length).toBe(65536);
    expect(r.afterRead(20_000, false)).toBe(big);
    const fresh = r.afterRead(20_000, true);
    expect(fresh).not.toBe(big);
    expect(fresh.length).toBe(65536);
    expect(r.afterRead(65536, true).length).toBe(65536);
    // A head read apart from its body does not shrink it; a run of small reads does.
    const grown = r.afterRead(300, false);
    expect(grown.length).toBe(65536);
    expect(r.afterRead(16_000, false)).toBe(grown);
    for (let i = 1; i < SMALL_READS_TO_SHRINK; i++) expect(r.afterRead(10, false).length).toBe(65536);
    expect(r.afterRead(10, false).length).toBe(4096);
  });
});
