import type { FlowKey } from '@slb/balancing';
import { describe, expect, it } from 'vitest';
import { BackendPool, type BackendSpec } from '../src/backend-pool.js';
import { L4Metrics } from '../src/metrics.js';

const metrics = new L4Metrics({ defaultMetrics: false });
const flow = (srcAddr: string): FlowKey => ({
  srcAddr,
  srcPort: 1,
  dstAddr: '127.0.0.1',
  dstPort: 80,
  protocol: 'tcp',
});
const spec = (id: string, extra: Partial<BackendSpec> = {}): BackendSpec => ({
  serverId: id,
  address: '127.0.0.1',
  port: 9000,
  weight: 10,
  healthy: true,
  ...extra,
});
const settings = { scheduler: 'rr' as const, drainTimeoutMs: 10_000, persistenceTimeoutMs: 0 };

function newPool(name: string) {
  return new BackendPool(name, metrics, metrics.forListener(name));
}

describe('BackendPool', () => {
  it('gives new flows only to healthy positive-weight backends', () => {
    const p = newPool('p1');
    p.update([spec('a', { healthy: false }), spec('b', { weight: 0 }), spec('c')], settings);
    for (let i = 0; i < 5; i++) expect(p.pick(flow('10.0.0.1'), 0, undefined)?.id).toBe('c');
    expect(p.failOpen).toBe(false);
  });

  it('fails open to every positive-weight backend when none is healthy', () => {
    const p = newPool('p2');
    p.update(
      [spec('a', { healthy: false }), spec('b', { healthy: false }), spec('z', { weight: 0, healthy: false })],
      settings,
    );
    expect(p.failOpen).toBe(true);
    const ids = new Set(Array.from({ length: 6 }, () => p.pick(flow('10.0.0.1'), 0, undefined)?.id));
    expect(ids).toEqual(new Set(['a', 'b']));
  });

  it('skips backends this flow already failed on, and gives up when all are tried', () => {
    const p = newPool('p3');
    p.update([spec('a'), spec('b')], settings);
    const first = p.pick(flow('10.0.0.1'), 0, undefined)!;
    const second = p.pick(flow('10.0.0.1'), 0, [first])!;
    expect(second.id).not.toBe(first.id);
    expect(p.pick(flow('10.0.0.1'), 0, [first, second])).toBeUndefined();
  });

  it('remembers a client for the persistence timeout, unless its backend stops taking flows', () => {
    const p = newPool('p4');
    const s = { ...settings, persistenceTimeoutMs: 30_000 };
    p.update([spec('a'), spec('b'), spec('c')], s);
    const b = p.pick(flow('10.0.0.9'), 0, undefined)!;
    p.remember('10.0.0.9', b, 0);
    for (let i = 0; i < 5; i++) expect(p.pick(flow('10.0.0.9'), 1_000 * i, undefined)).toBe(b);
    expect(p.pick(flow('10.0.0.9'), 100_000, undefined)).toBeDefined(); // expired: scheduled again
    p.remember('10.0.0.9', b, 100_000);
    p.update(
      [spec('a'), spec('b'), spec('c')].map((x) => (x.serverId === b.id ? { ...x, healthy: false } : x)),
      s,
    );
    expect(p.pick(flow('10.0.0.9'), 101_000, undefined)?.id).not.toBe(b.id);
  });

  it('keeps a backend’s live state across updates while its address stays, and drains removed ones', () => {
    const p = newPool('p5');
    p.update([spec('a')], settings);
    const a = p.get('a')!;
    a.active = 3;
    p.update([spec('a', { weight: 50 })], settings);
    expect(p.get('a')).toBe(a);
    expect(a.active).toBe(3);
    p.update([spec('a', { port: 9001 })], settings);
    expect(p.get('a')).not.toBe(a); // same id, new address: a new server; the old one drains
    expect(a.drainTimer).toBeDefined();
    clearTimeout(a.drainTimer);
  });

  it('closes a drained backend’s connections at once when the drain timeout is 0', () => {
    const p = newPool('p6');
    p.update([spec('a')], { ...settings, drainTimeoutMs: 0 });
    const closed: string[] = [];
    p.get('a')!.track({ drainClose: () => closed.push('x'), backendSlot: -1 });
    p.update([spec('a', { weight: 0 })], { ...settings, drainTimeoutMs: 0 });
    expect(closed).toEqual(['x']);
  });

  it('keeps a backend that never carried traffic small, and follows its spec on reload', () => {
    // A node holds one per listener and server (500,000 at bench/scale.mjs size): 12 fields each took 57 MiB.
    const p = newPool('p7');
    const first = spec('a');
    p.update([first], settings);
    const a = p.get('a')!;
    expect(Object.keys(a).length).toBeLessThanOrEqual(5);
    expect(a.conns.size).toBe(0);
    const reloaded = spec('a', { weight: 7, healthy: false });
    p.update([reloaded], settings);
    expect(p.get('a')).toBe(a);
    expect([a.weight, a.healthy, a.id, a.address, a.port]).toEqual([7, false, 'a', '127.0.0.1', 9000]);
  });

  it('builds nothing for a listener no flow has reached: reloads only keep its latest config', () => {
    let reads = 0;
    const counted = (id: string, weight: number): BackendSpec => ({
      get serverId() {
        reads++;
        return id;
      },
      address: '127.0.0.1',
      port: 9000,
      weight,
      healthy: true,
    });
    const p = newPool('p-lazy');
    const s = { ...settings, persistenceTimeoutMs: 5_000 };
    for (let i = 0; i < 3; i++) p.update([counted('a', 10), counted('b', 0)], s);
    // A fleet's idle listeners: no state, map or scheduler per backend until a flow needs one.
    expect(reads).toBe(0);
    expect(p.persistenceTimeoutMs).toBe(5_000);
    expect(p.persistenceSize).toBe(0);
    expect(p.pick(flow('10.0.0.1'), 0, undefined)?.id).toBe('a');
    expect(reads).toBeGreaterThan(0);
    // Built, a reload is applied at once: live state carries over.
    const a = p.get('a')!;
    p.update([counted('a', 10)], s);
    expect(p.get('a')).toBe(a);
  });
});
