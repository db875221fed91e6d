import { describe, expect, it } from 'vitest';
import {
  bottleneck,
  compare,
  compareWithBest,
  cpuMicrosPer,
  cpuPercent,
  median,
  parseCpuList,
  planPinning,
  quantile,
  sameRoundRatios,
  verdict,
} from './bench-verdict.mjs';

describe('parseCpuList', () => {
  it('reads single CPUs, ranges and both', () => {
    expect(parseCpuList('1')).toEqual([1]);
    expect(parseCpuList('0-3,6\n')).toEqual([0, 1, 2, 3, 6]);
  });

  it('refuses what is no list', () => {
    expect(() => parseCpuList('a')).toThrow(/bad CPU list/);
    expect(() => parseCpuList('3-1')).toThrow(/bad CPU list/);
  });
});

describe('CPU arithmetic', () => {
  it('gives % of one core and µs per unit', () => {
    expect(cpuPercent(4.5, 5)).toBeCloseTo(90);
    expect(cpuPercent(1, 0)).toBeNaN();
    // nginx at ~27k req/s on one core costs ~37 µs a request.
    expect(cpuMicrosPer(1, 27_000)).toBeCloseTo(37.04, 1);
    expect(cpuMicrosPer(1, 0)).toBeNaN();
  });
});

describe('bottleneck', () => {
  const row = { loadCores: 1, targetCores: 1 };

  it('names the generator when its core is full and the target has room', () => {
    expect(bottleneck({ ...row, loadPct: 97, targetPct: 80 })).toBe('generator-limited');
  });

  it('names the target when its core is full, whatever the generator does', () => {
    expect(bottleneck({ ...row, loadPct: 30, targetPct: 100 })).toBe('target-limited');
    expect(bottleneck({ ...row, loadPct: 99, targetPct: 95 })).toBe('target-limited');
  });

  it('names neither when both have room (foreign load, latency)', () => {
    expect(bottleneck({ ...row, loadPct: 70, targetPct: 60 })).toBe('unsaturated');
  });

  it('scales the threshold with the cores each side may use', () => {
    expect(bottleneck({ loadCores: 2, targetCores: 1, loadPct: 150, targetPct: 50 })).toBe('unsaturated');
    expect(bottleneck({ loadCores: 2, targetCores: 1, loadPct: 185, targetPct: 50 })).toBe('generator-limited');
  });
});

describe('compare', () => {
  const node = { rate: 41_000, cpuUs: 24, limit: 'target-limited' };

  it('divides throughput when both rows were limited by their target', () => {
    const nginx = { rate: 71_700, cpuUs: 13.5, limit: 'target-limited' };
    const c = compare(node, nginx);
    expect(c.basis).toBe('throughput');
    expect(c.ratio).toBeCloseTo(0.572, 3);
  });

  it('divides CPU per unit, reference over target, when either row was generator-limited', () => {
    const nginx = { rate: 43_300, cpuUs: 18, limit: 'generator-limited' };
    expect(compare(node, nginx)).toEqual({ ratio: 0.75, basis: 'CPU per unit' });
    expect(compare({ ...node, limit: 'generator-limited' }, { ...nginx, limit: 'target-limited' }).basis).toBe(
      'CPU per unit',
    );
  });

  it('divides CPU per unit when a row was unsaturated (its throughput was not its capacity)', () => {
    const nginx = { rate: 8_650, cpuUs: 25, limit: 'unsaturated' };
    expect(compare({ ...node, cpuUs: 50 }, nginx)).toEqual({ ratio: 0.5, basis: 'CPU per unit' });
  });

  it('falls back to throughput when a CPU figure is missing', () => {
    const direct = { rate: 99_000, cpuUs: Number.NaN, limit: 'generator-limited' };
    expect(compare(node, direct).basis).toBe('throughput');
  });

  it('compares with the strongest reference', () => {
    const peers = [
      { name: 'undici', rate: 21_800, cpuUs: 45, limit: 'target-limited' },
      { name: 'http-proxy', rate: 15_000, cpuUs: 66, limit: 'target-limited' },
    ];
    const best = compareWithBest(node, peers);
    expect(best?.name).toBe('undici');
    expect(best?.ratio).toBeCloseTo(1.88, 2);
    expect(compareWithBest(node, [])).toBeUndefined();
  });
});

describe('verdict', () => {
  it('prints the ratio, the goal and whether it is met', () => {
    expect(verdict(0.5716, 'nginx', { min: 0.8 })).toBe('0.57× nginx (goal ≥ 0.8×) MISS');
    expect(verdict(2.06, 'best plain Node', { min: 2 })).toBe('2.06× best plain Node (goal ≥ 2×) ok');
    expect(verdict(0.8, 'haproxy', { min: 0.8 })).toBe('0.80× haproxy (goal ≥ 0.8×) ok');
  });

  it('labels a CPU-cost ratio and reads a max goal as lower-is-better', () => {
    expect(verdict(0.75, 'nginx', { min: 0.8 }, 'CPU per unit', 'req')).toBe(
      '0.75× nginx by CPU/req (goal ≥ 0.8×) MISS',
    );
    expect(verdict(4.5, 'haproxy p99', { max: 2 })).toBe('4.50× haproxy p99 (goal ≤ 2×) MISS');
    expect(verdict(1.5, 'haproxy p99', { max: 2 })).toBe('1.50× haproxy p99 (goal ≤ 2×) ok');
  });

  it('says n/a when there is nothing to compare with', () => {
    expect(verdict(Number.NaN, 'nginx', { min: 0.8 })).toBe('n/a nginx');
  });
});

describe('planPinning', () => {
  it('puts the load side and the proxies on the first two CPUs when taskset is there', () => {
    expect(planPinning([2, 3, 5], true)).toEqual({
      cpus: [2, 3],
      loadCpu: '2',
      proxyCpu: '3',
      loadCores: 1,
      targetCores: 1,
    });
  });

  it('pins nothing without taskset or a second CPU: every side may use every CPU', () => {
    expect(planPinning([0, 1], false)).toEqual({
      cpus: [0, 1],
      loadCpu: null,
      proxyCpu: null,
      loadCores: 2,
      targetCores: 2,
    });
    expect(planPinning([0], true)).toEqual({ cpus: [0], loadCpu: null, proxyCpu: null, loadCores: 1, targetCores: 1 });
  });
});

describe('median', () => {
  it('takes the middle value of an odd count and the mean of the middle two of an even one, in any order', () => {
    expect(median([1.57, 0.95, 1.53])).toBe(1.53);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([7])).toBe(7);
    expect(median([])).toBeNaN();
  });
});

describe('quantile', () => {
  it('takes the nearest rank of the sorted list, the largest for 1, NaN for none', () => {
    const xs = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
    expect(quantile(xs, 0.5)).toBe(6);
    expect(quantile(xs, 0.99)).toBe(10);
    expect(quantile(xs, 1)).toBe(10);
    expect(quantile(xs, 0)).toBe(1);
    expect(quantile([], 0.5)).toBeNaN();
  });
});

describe('sameRoundRatios', () => {
  const row = (name: string, rate: number, cpuUs: number, limit = 'target-limited') => ({ name, rate, cpuUs, limit });
  const isNode = (r: { name: string }) => r.name === 'node';
  const isNginx = (r: { name: string }) => r.name === 'nginx';

  it('pairs rows within each round and takes the median, where the best rounds alone would pair unlike spells', () => {
    const rounds = [
      // A slow spell for both: the node's worst round and nginx's worst round.
      [row('node', 30_000, 30), row('nginx', 36_000, 25)],
      [row('node', 39_000, 24), row('nginx', 38_000, 20, 'generator-limited')],
      // nginx's best round, in a spell the node did not get.
      [row('node', 35_000, 28), row('nginx', 48_000, 18, 'generator-limited')],
    ];
    const r = sameRoundRatios(rounds, isNode, isNginx);
    expect(r.ratios.map((x) => Number(x.toFixed(3)))).toEqual([0.833, 0.833, 0.643]);
    expect(r.median).toBeCloseTo(0.833, 3);
    expect(r.bases).toEqual(['throughput', 'CPU per unit', 'CPU per unit']);
  });

  it('takes the strongest reference of each round and leaves out rounds missing a side', () => {
    const rounds = [
      [row('node', 40_000, 25), row('undici', 20_000, 50), row('http-proxy', 10_000, 100)],
      [row('node', 40_000, 25)],
      [row('undici', 20_000, 50)],
      [row('node', 36_000, 27), row('undici', 24_000, 41), row('http-proxy', 12_000, 80)],
    ];
    const r = sameRoundRatios(rounds, isNode, (x) => x.name === 'undici' || x.name === 'http-proxy');
    expect(r.ratios).toEqual([2, 1.5]);
    expect(r.median).toBe(1.75);
    expect(sameRoundRatios([], isNode, isNginx).median).toBeNaN();
  });
});
