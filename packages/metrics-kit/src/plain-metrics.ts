import type { Registry } from 'prom-client';

// Metric families for the forwarding path, counted in plain numbers. prom-client validates and hashes the
// label set on every update; at tens of thousands of requests a second that cost the L7 node 10-20% of its
// throughput, and the L4 node 6% of its new connections per second. These find a series by its label values
// (or hand out the series itself, to update with no lookup at all) and are read (formatted by prom-client's
// registry, aggregated across workers like any other metric) only when scraped.

type Labels = Record<string, string>;

interface MetricValue {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

export abstract class PlainFamily<S extends { labels: Labels }> {
  readonly aggregator = 'sum';
  /** Every series, for reading and removal. */
  protected readonly series = new Map<string, S>();
  /** The same series by label value, one map level per label (see `at`). */
  private tree = new Map<string, unknown>();
  abstract readonly type: 'counter' | 'gauge' | 'histogram';

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  /**
   * The series of these label values (in `labelNames` order), created on first use. Found through one map
   * per label: label values are strings the node holds on to, whose hashes V8 caches, where a joined key
   * would be a new string to hash on every request.
   */
  protected at(values: readonly string[]): S {
    let level: Map<string, unknown> = this.tree;
    const last = this.labelNames.length - 1;
    for (let i = 0; i < last; i++) {
      const v = values[i] ?? '';
      let next = level.get(v) as Map<string, unknown> | undefined;
      if (next === undefined) {
        next = new Map();
        level.set(v, next);
      }
      level = next;
    }
    const v = values[last] ?? '';
    let s = level.get(v) as S | undefined;
    if (s === undefined) {
      const labels: Labels = {};
      for (let i = 0; i <= last; i++) labels[this.labelNames[i]!] = values[i] ?? '';
      s = this.create(labels);
      level.set(v, s);
      this.series.set(seriesKey(this.labelNames, labels), s);
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
    const key = seriesKey(this.labelNames, labels);
    if (!this.series.has(key)) return;
    this.series.delete(key);
    // Empty maps may stay behind in the tree; the leaf must go, or updates would count into a dropped series.
    let level: Map<string, unknown> | undefined = this.tree;
    const last = this.labelNames.length - 1;
    for (let i = 0; i < last && level !== undefined; i++) {
      level = level.get(String(labels[this.labelNames[i]!] ?? '')) as Map<string, unknown> | undefined;
    }
    level?.delete(String(labels[this.labelNames[last]!] ?? ''));
  }

  reset(): void {
    this.series.clear();
    this.tree = new Map();
  }
}

function seriesKey(names: readonly string[], labels: Record<string, string | number>): string {
  return names.map((n) => String(labels[n] ?? '')).join('\u0000');
}

/** One counter or gauge series; a holder may keep it and update it directly. */
export class CountSeries {
  value = 0;

  constructor(readonly labels: Labels) {}

  inc(by = 1): void {
    this.value += by;
  }

  dec(by = 1): void {
    this.value -= by;
  }
}

abstract class CountFamily extends PlainFamily<CountSeries> {
  /** The series of these label values, to keep and update without a lookup (until it is removed). */
  child(values: readonly string[]): CountSeries {
    return this.at(values);
  }

  protected create(labels: Labels): CountSeries {
    return new CountSeries(labels);
  }

  protected values(s: CountSeries): MetricValue[] {
    return [{ value: s.value, labels: s.labels }];
  }
}

export class PlainCounter extends CountFamily {
  readonly type = 'counter';

  inc(values: readonly string[], by = 1): void {
    this.at(values).value += by;
  }
}

export class PlainGauge extends CountFamily {
  readonly type = 'gauge';

  add(values: readonly string[], by: number): void {
    this.at(values).value += by;
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
