import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { promMetrics } from './prom-metrics.js';

// The helper only saves typing: its metrics must expose exactly what prom-client's own constructors do.
describe('promMetrics', () => {
  it('exposes what the prom-client constructors expose', async () => {
    const bound = new Registry();
    const prom = promMetrics(bound);
    prom.counter('c_total', 'a counter', ['a']).inc({ a: 'x' });
    prom.gauge('g', 'a gauge', [], { aggregator: 'max' }).set(2);
    prom.gauge('s', 'a scraped gauge', ['k'], {
      collect() {
        this.set({ k: 'v' }, 7);
      },
    });
    prom.histogram('h_seconds', 'a histogram', ['b'], [0.1, 1]).observe({ b: 'y' }, 0.5);

    const plain = new Registry();
    const registers = [plain];
    new Counter({ name: 'c_total', help: 'a counter', labelNames: ['a'], registers }).inc({ a: 'x' });
    new Gauge({ name: 'g', help: 'a gauge', registers, aggregator: 'max' }).set(2);
    new Gauge({
      name: 's',
      help: 'a scraped gauge',
      labelNames: ['k'],
      registers,
      collect() {
        this.set({ k: 'v' }, 7);
      },
    });
    new Histogram({ name: 'h_seconds', help: 'a histogram', labelNames: ['b'], buckets: [0.1, 1], registers }).observe(
      { b: 'y' },
      0.5,
    );

    expect(await bound.metrics()).toBe(await plain.metrics());
    expect(await bound.getMetricsAsJSON()).toEqual(await plain.getMetricsAsJSON());
  });
});
