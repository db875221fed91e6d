import type { Registry } from 'prom-client';

// Metric families for the per-request path, counted in plain numbers. prom-client validates and hashes the
// label set on every update; at tens of thousands of requests a second that cost the node 10-20% of its
// throughput. These find a series by its joined label values and are read (formatted by prom-client's
// registry, aggregated across workers like any other metric) only when scraped.

type Labels = Record<string, string>;

interface MetricValue {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

export abstract class PlainFamily<S extends { labels: Labels }> {
  readonly aggregator = 'sum';
  protected readonly series = new Map<string, S>();
  abstract readonly type: 'counter' | 'gauge' | 'histogram';

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  /** The series of these label values (in `labelNames` order), created on first use. */
  protected at(values: readonly string[]): S {
    const key = values.join('\u0000');
    let s = this.series.get(key);
    if (s === undefined) {
      const labels: Labels = {};
      for (let i = 0; i < this.labelNames.length; i++) labels[this.labelNames[i]!] = values[i] ?? '';
      s = this.create(labels);
      this.series.set(key, s);
    }
    return s;
  }

  protected abstract create(labels: Labels): S;
  protected abstract values(s: S): MetricValue[];

  /** What prom-client's registry reads to format or aggregate the family. */
  get(): { name: string; help: string; type: string; values: MetricValue[]; aggregator: string } {
    const values: MetricValue[] = [];
    for (const s of this.series.values()) values.push(...this.values(s));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** Drops one series (the node no longer serves what it counts). */
  remove(labels: Record<string, string | number>): void {
    this.series.delete(this.labelNames.map((n) => String(labels[n] ?? '')).join('\u0000'));
  }

  reset(): void {
    this.series.clear();
  }
}

interface Count {
  labels: Labels;
  value: number;
}

export class PlainCounter extends PlainFamily<Count> {
  readonly type = 'counter';

  inc(values: readonly string[], by = 1): void {
    this.at(values).value += by;
  }

  protected create(labels: Labels): Count {
    return { labels, value: 0 };
  }

  protected values(s: Count): MetricValue[] {
    return [{ value: s.value, labels: s.labels }];
  }
}

export class PlainGauge extends PlainFamily<Count> {
  readonly type = 'gauge';

  add(values: readonly string[], by: number): void {
    this.at(values).value += by;
  }

  protected create(labels: Labels): Count {
    return { labels, value: 0 };
  }

  protected values(s: Count): MetricValue[] {
    return [{ value: s.value, labels: s.labels }];
  }
}

interface Buckets {
  labels: Labels;
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  counts: number[];
  sum: number;
  count: number;
}

export class PlainHistogram extends PlainFamily<Buckets> {
  readonly type = 'histogram';

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    super(name, help, labelNames, registry);
  }

  observe(values: readonly string[], v: number): void {
    const s = this.at(values);
    let i = 0;
    while (i < this.bounds.length && v > this.bounds[i]!) i++;
    s.counts[i]!++;
    s.sum += v;
    s.count++;
  }

  protected create(labels: Labels): Buckets {
    return { labels, counts: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 };
  }

  protected values(s: Buckets): MetricValue[] {
    const out: MetricValue[] = [];
    let cumulative = 0;
    for (let i = 0; i <= this.bounds.length; i++) {
      cumulative += s.counts[i]!;
      out.push({
        value: cumulative,
        labels: { le: i < this.bounds.length ? this.bounds[i]! : '+Inf', ...s.labels },
        metricName: `${this.name}_bucket`,
      });
    }
    out.push({ value: s.sum, labels: s.labels, metricName: `${this.name}_sum` });
    out.push({ value: s.count, labels: s.labels, metricName: `${this.name}_count` });
    return out;
  }
}
