import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FlowKey, WeightedBackend } from '../types.js';
import { createScheduler, type SchedulerKind } from './index.js';

const flow = (srcAddr: string, srcPort = 40000): FlowKey => ({
  srcAddr,
  srcPort,
  dstAddr: '127.0.0.11',
  dstPort: 80,
  protocol: 'tcp',
});

const weightsArb = fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 1, maxLength: 12 });
const toBackends = (weights: number[]): WeightedBackend[] => weights.map((weight, i) => ({ id: `srv-${i}`, weight }));

describe('wrr (smooth weighted round robin)', () => {
  it('matches the weights exactly over every cycle of sum(weights) picks (property)', () => {
    fc.assert(
      fc.property(weightsArb, fc.integer({ min: 1, max: 3 }), (weights, cycles) => {
        const s = createScheduler('wrr', { backends: toBackends(weights) });
        const total = weights.reduce((a, b) => a + b, 0);
        for (let c = 0; c < cycles; c++) {
          const counts = new Array<number>(weights.length).fill(0);
          for (let k = 0; k < total; k++) {
            const i = s.pick(flow('10.0.0.1'));
            counts[i] = counts[i]! + 1;
          }
          expect(counts).toEqual(weights);
        }
        if (total === 0) expect(s.pick(flow('10.0.0.1'))).toBe(-1);
      }),
    );
  });

  it('interleaves a heavy backend instead of bunching it (nginx 5:1:1)', () => {
    const s = createScheduler('wrr', { backends: toBackends([5, 1, 1]) });
    const seq = Array.from({ length: 7 }, () => s.pick(flow('10.0.0.1')));
    expect(seq).toEqual([0, 0, 1, 0, 2, 0, 0]);
  });
});

describe('wlc (weighted least connections)', () => {
  it('picks a backend with the least load/weight among positive weights (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 50 })), {
          minLength: 1,
          maxLength: 12,
        }),
        (pairs) => {
          const backends = toBackends(pairs.map(([w]) => w));
          const loads = pairs.map(([, l]) => l);
          const s = createScheduler('wlc', { backends, load: (i) => loads[i]! });
          const i = s.pick(flow('10.0.0.1'));
          const eligible = pairs.flatMap(([w, l], k) => (w > 0 ? [{ k, ratio: l / w }] : []));
          if (eligible.length === 0) {
            // A bare `return expect(...)` would hand fast-check the assertion's value as the verdict.
            expect(i).toBe(-1);
            return;
          }
          const best = Math.min(...eligible.map((e) => e.ratio));
          expect(pairs[i]![0]).toBeGreaterThan(0);
          expect(loads[i]! / pairs[i]![0]).toBeCloseTo(best, 12);
        },
      ),
    );
  });

  it('follows weights as connections accumulate', () => {
    const loads = [0, 0, 0];
    const s = createScheduler('wlc', { backends: toBackends([1, 2, 3]), load: (i) => loads[i]! });
    for (let k = 0; k < 600; k++) {
      const i = s.pick(flow('10.0.0.1'));
      loads[i] = loads[i]! + 1;
    }
    expect(loads).toEqual([100, 200, 300]);
  });
});

describe('rr', () => {
  it('cycles through positive-weight backends and skips weight 0', () => {
    const s = createScheduler('rr', { backends: toBackends([3, 0, 1]) });
    expect(Array.from({ length: 4 }, () => s.pick(flow('10.0.0.1')))).toEqual([0, 2, 0, 2]);
  });
});

describe('consistent hash schedulers (sch, tch)', () => {
  const many = toBackends(Array.from({ length: 50 }, () => 10));

  it('sch keeps a client address on one backend whatever its port; tch spreads ports', () => {
    const sch = createScheduler('sch', { backends: many, maglevTableSize: 5003 });
    const tch = createScheduler('tch', { backends: many, maglevTableSize: 5003 });
    const bySch = new Set(Array.from({ length: 200 }, (_, p) => sch.pick(flow('192.0.2.7', 1024 + p))));
    const byTch = new Set(Array.from({ length: 200 }, (_, p) => tch.pick(flow('192.0.2.7', 1024 + p))));
    expect(bySch.size).toBe(1);
    expect(byTch.size).toBeGreaterThan(30);
  });

  it('picks alike in independently built schedulers, whatever the backend order (property)', () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.integer({ min: 1, max: 65535 }), (addr, port) => {
        const reversed = [...many].reverse();
        for (const kind of ['sch', 'tch'] as const) {
          const a = createScheduler(kind, { backends: many, maglevTableSize: 5003 });
          const b = createScheduler(kind, { backends: reversed, maglevTableSize: 5003 });
          expect(reversed[b.pick(flow(addr, port))]!.id).toBe(many[a.pick(flow(addr, port))]!.id);
        }
      }),
      { numRuns: 50 },
    );
  });
});

describe('every scheduler', () => {
  it('never gives a new flow to a weight-0 backend, and returns -1 when none can take it (property)', () => {
    const kinds: SchedulerKind[] = ['rr', 'wrr', 'wlc', 'sch', 'tch'];
    fc.assert(
      fc.property(fc.constantFrom(...kinds), weightsArb, fc.ipV4(), (kind, weights, addr) => {
        const backends = toBackends(weights);
        const s = createScheduler(kind, { backends, maglevTableSize: 251 });
        for (let k = 0; k < 20; k++) {
          const i = s.pick(flow(addr, 1000 + k));
          if (weights.every((w) => w === 0)) expect(i).toBe(-1);
          else expect(backends[i]!.weight).toBeGreaterThan(0);
        }
      }),
    );
  });
});
