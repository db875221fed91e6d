import type { SnapshotBackend } from '@slb/model';
import { describe, expect, it } from 'vitest';
import { type CheckedBackends, resolveListener } from '../src/resolve-listener.js';
import { backend, listener, snapshot } from './helpers.js';

const node = { sourceAddress: undefined, reusePort: false };

describe('resolveListener with the apply’s checked backends', () => {
  it('checks a backends array that several listeners share (one backend set) once', () => {
    const shared = [backend(1, 9001), backend(2, 9002), backend(3, 9003)];
    const listeners = [1, 2, 3].map((n) => listener(n, 8000 + n, { backends: shared }));
    const s = snapshot(1, listeners);
    const checked: CheckedBackends = new WeakSet();
    let asked = 0;
    const allowed = () => {
      asked++;
      return true;
    };
    for (const l of listeners) expect(resolveListener(l, s, allowed, node, checked).backends).toBe(shared);
    expect(asked).toBe(3);
  });

  it('asks for every listener of an array with a denied backend: each counts and logs its denial', () => {
    const shared = [backend(1, 9001), backend(2, 22)];
    const listeners = [1, 2].map((n) => listener(n, 8000 + n, { backends: shared }));
    const s = snapshot(1, listeners);
    const checked: CheckedBackends = new WeakSet();
    const denied: string[] = [];
    const allowed = (b: SnapshotBackend) => {
      if (b.port !== 22) return true;
      denied.push(b.serverId);
      return false;
    };
    for (const l of listeners) expect(resolveListener(l, s, allowed, node, checked).backends).toEqual([shared[0]]);
    expect(denied).toHaveLength(2);
  });

  it('refuses a listener whose servers repeat, each time', () => {
    const twice = [backend(1, 9001), backend(1, 9001)];
    const listeners = [1, 2].map((n) => listener(n, 8000 + n, { backends: twice }));
    const s = snapshot(1, listeners);
    const checked: CheckedBackends = new WeakSet();
    for (const l of listeners)
      expect(() => resolveListener(l, s, () => true, node, checked)).toThrow(/backends\/1\/serverId: duplicate/);
  });
});
