import type { SnapshotBackend, SnapshotListener } from '@slb/model';
import { describe, expect, it } from 'vitest';
import { BackendInterner } from './backend-intern.js';

/** A backend whose fields count their reads: what interning costs per listener. */
function counted(n: number, reads: { n: number }): SnapshotBackend {
  const b = { address: '10.0.0.1', port: 80 + n, weight: 100, healthy: true };
  return {
    get serverId() {
      reads.n++;
      return `srv-${n}`;
    },
    ...b,
  } as SnapshotBackend;
}

const listenerWith = (backends: SnapshotBackend[]) => ({ backends }) as unknown as SnapshotListener;

describe('BackendInterner', () => {
  it('interns an array that several listeners were given (one backend set) once, not once per listener', () => {
    const reads = { n: 0 };
    const set = [counted(1, reads), counted(2, reads)];
    const interner = new BackendInterner();
    const listeners = Array.from({ length: 100 }, () => listenerWith(set));
    interner.intern(listeners[0]!);
    const once = reads.n;
    expect(once).toBeGreaterThan(0);
    for (const l of listeners) interner.intern(l);
    expect(reads.n).toBe(once);
    expect(new Set(listeners.map((l) => l.backends)).size).toBe(1);
  });

  it('still gives listeners with equal backends in distinct arrays one array', () => {
    const backends = () => [
      { serverId: 'srv-1', address: '10.0.0.1', port: 80, weight: 100, healthy: true },
      { serverId: 'srv-2', address: '10.0.0.2', port: 80, weight: 100, healthy: true },
    ];
    const interner = new BackendInterner();
    const [a, b, c] = [listenerWith(backends()), listenerWith(backends()), listenerWith(backends())];
    for (const l of [a, b, c]) interner.intern(l);
    expect(b.backends).toBe(a.backends);
    expect(c.backends).toBe(a.backends);
    // An array seen again after it was replaced by its twin becomes that twin again.
    const again = listenerWith(b.backends);
    interner.intern(again);
    expect(again.backends).toBe(a.backends);
  });
});
