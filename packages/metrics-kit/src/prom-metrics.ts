import { Counter, Gauge, type GaugeConfiguration, Histogram, type Registry } from 'prom-client';

/** What a gauge may add to its name, help and labels: an aggregator across workers, or a scrape-time value. */
export type GaugeOptions<L extends string> = Pick<GaugeConfiguration<L>, 'aggregator' | 'collect'>;

/**
 * prom-client's metric constructors bound to one registry. Every process keeps its metrics on a registry of
 * its own (tests build several apps in one process), so without this each declaration repeats
 * `registers: [registry]` and the `as const` that keeps its label names typed.
 */
export interface PromMetrics {
  counter<L extends string = string>(name: string, help: string, labelNames?: readonly L[]): Counter<L>;
  gauge<L extends string = string>(
    name: string,
    help: string,
    labelNames?: readonly L[],
    options?: GaugeOptions<L>,
  ): Gauge<L>;
  /** Label names before the bucket bounds, as PlainHistogram's constructor takes them. */
  histogram<L extends string = string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    buckets: readonly number[],
  ): Histogram<L>;
}

export function promMetrics(registry: Registry): PromMetrics {
  const registers = [registry];
  return {
    counter: (name, help, labelNames = []) => new Counter({ name, help, labelNames, registers }),
    gauge: (name, help, labelNames = [], options = {}) => new Gauge({ name, help, labelNames, registers, ...options }),
    histogram: (name, help, labelNames, buckets) =>
      new Histogram({ name, help, labelNames, buckets: [...buckets], registers }),
  };
}
