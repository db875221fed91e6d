import { AggregatorRegistry, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { PlainCounter, PlainGauge, PlainHistogram } from './plain-metrics.js';

const BOUNDS = [0.001, 0.01, 0.1, 1];
const SAMPLES: [string, string, number][] = [
  ['lsn-a', 'srv-1', 0.0004],
  ['lsn-a', 'srv-1', 0.001],
  ['lsn-a', 'srv-1', 0.05],
  ['lsn-a', 'srv-2', 2.5],
  ['lsn-b', 'srv-1', 0.2],
];

/** The same families and updates on prom-client's own metrics and on the plain ones. */
function both() {
  const promRegistry = new Registry();
  const plainRegistry = new Registry();
  const prom = {
    requests: new Counter({
      name: 'x_requests_total',
      help: 'h',
      labelNames: ['listener', 'backend', 'code'],
      registers: [promRegistry],
    }),
    active: new Gauge({ name: 'x_active', help: 'h', labelNames: ['listener'], registers: [promRegistry] }),
    latency: new Histogram({
      name: 'x_latency_seconds',
      help: 'h',
      labelNames: ['listener', 'backend'],
      buckets: BOUNDS,
      registers: [promRegistry],
    }),
  };
  const plain = {
    requests: new PlainCounter('x_requests_total', 'h', ['listener', 'backend', 'code'], plainRegistry),
    active: new PlainGauge('x_active', 'h', ['listener'], plainRegistry),
    latency: new PlainHistogram('x_latency_seconds', 'h', ['listener', 'backend'], BOUNDS, plainRegistry),
  };
  for (const [listener, backend, v] of SAMPLES) {
    prom.requests.labels(listener, backend, '2xx').inc();
    plain.requests.inc([listener, backend, '2xx']);
    prom.active.labels(listener).inc();
    plain.active.add([listener], 1);
    prom.latency.labels(listener, backend).observe(v);
    plain.latency.observe([listener, backend], v);
  }
  prom.active.labels('lsn-a').dec();
  plain.active.add(['lsn-a'], -1);
  return { promRegistry, plainRegistry, prom, plain };
}

describe('plain metric families', () => {
  it('are exposed exactly as prom-client exposes the same updates', async () => {
    const { promRegistry, plainRegistry } = both();
    const text = await plainRegistry.metrics();
    expect(text).toContain('x_latency_seconds_bucket{le="+Inf",listener="lsn-a",backend="srv-2"} 1');
    expect(text).toBe(await promRegistry.metrics());
  });

  it('drop a removed series and keep the others', async () => {
    const { promRegistry, plainRegistry, prom, plain } = both();
    prom.latency.remove({ listener: 'lsn-a', backend: 'srv-1' });
    plain.latency.remove({ listener: 'lsn-a', backend: 'srv-1' });
    prom.requests.remove({ listener: 'lsn-b', backend: 'srv-1', code: '2xx' });
    plain.requests.remove({ listener: 'lsn-b', backend: 'srv-1', code: '2xx' });
    const text = await plainRegistry.metrics();
    expect(text).not.toContain('listener="lsn-a",backend="srv-1"}');
    expect(text).toContain('x_latency_seconds_count{listener="lsn-b",backend="srv-1"} 1');
    expect(text).toBe(await promRegistry.metrics());
    // A series counted again after its removal starts over, and shows.
    plain.latency.observe(['lsn-a', 'srv-1'], 0.5);
    expect(await plainRegistry.metrics()).toContain('x_latency_seconds_count{listener="lsn-a",backend="srv-1"} 1');
  });

  it('add up across workers like prom-client metrics', async () => {
    const one = both();
    const two = both();
    const promSum = AggregatorRegistry.aggregate([
      await one.promRegistry.getMetricsAsJSON(),
      await two.promRegistry.getMetricsAsJSON(),
    ]);
    const plainSum = AggregatorRegistry.aggregate([
      await one.plainRegistry.getMetricsAsJSON(),
      await two.plainRegistry.getMetricsAsJSON(),
    ]);
    const text = await plainSum.metrics();
    expect(text).toContain('x_requests_total{listener="lsn-a",backend="srv-1",code="2xx"} 6');
    expect(text).toBe(await promSum.metrics());
  });
});
