import type { ListenerTrafficReport } from './channel.js';
import {
  MAX_METRICS_POINTS,
  METRICS_RESOLUTION_SECONDS,
  METRICS_RETENTION_SECONDS,
  RESPONSE_CLASSES,
  type TrafficMetrics,
  UPSTREAM_TIME_BOUNDS_MS,
} from './traffic.js';

import {
  type BucketSink,
  type BucketWrite,
  COUNTER_COUNT,
  HISTOGRAM_AT,
  HISTOGRAM_SIZE,
  hourOf,
  METRICS_HOUR_SECONDS,
  RESPONSES_AT,
} from './traffic-layout.js';

// The arithmetic of traffic metrics, with no I/O: a node's cumulative counters turned into per-bucket
// deltas, and the series read back from the stored buckets (their layout: traffic-layout.ts). The API
// does the I/O.

/** A listener report's counters as one vector (counter vector order, see traffic-layout.ts; absent http parts are zeros). */
export function countersOf(r: ListenerTrafficReport): number[] {
  const v = new Array<number>(COUNTER_COUNT).fill(0);
  v[0] = r.conns;
  v[1] = r.bytesIn;
  v[2] = r.bytesOut;
  v[3] = r.drops;
  r.responses?.forEach((n, i) => {
    if (i < RESPONSE_CLASSES.length) v[RESPONSES_AT + i] = n;
  });
  r.upstreamMs?.forEach((n, i) => {
    if (i < HISTOGRAM_SIZE) v[HISTOGRAM_AT + i] = n;
  });
  return v;
}

/**
 * What happened between two cumulative readings. No previous reading, or any counter smaller than before
 * (the node's counters for this listener started again: it dropped and re-created the listener), and the
 * new reading is all new.
 */
export function counterDelta(prev: readonly number[] | undefined, next: readonly number[]): number[] {
  if (prev === undefined || next.some((n, i) => n < (prev[i] ?? 0))) return [...next];
  return next.map((n, i) => n - (prev[i] ?? 0));
}

/** The bucket (unix seconds, a multiple of METRICS_RESOLUTION_SECONDS) a time in ms falls in. */
export function bucketOf(ms: number): number {
  return Math.floor(ms / 1000 / METRICS_RESOLUTION_SECONDS) * METRICS_RESOLUTION_SECONDS;
}

// ---- From the nodes' cumulative counters to deltas.

interface ListenerState {
  /** The last reading; null: the node restarted, the next reading is all new. */
  counters: number[] | null;
  at: number;
  /** The bucket of the node's last gauge write for this listener, and the value it holds there. */
  gaugeBucket: number;
  gaugeValue: number;
}

/**
 * What to add to a bucket's gauge for one node's new value: the whole value for its first in the bucket (a
 * zero too: a field says "reported", unlike none), else the difference from its previous one (null: none).
 */
function gaugeChange(state: ListenerState, bucket: number, active: number): number | null {
  if (state.gaugeBucket !== bucket) {
    state.gaugeBucket = bucket;
    state.gaugeValue = active;
    return active;
  }
  if (active === state.gaugeValue) return null;
  const change = active - state.gaugeValue;
  state.gaugeValue = active;
  return change;
}

interface NodeState {
  bootId: string;
  /** Set when first heard of in this process: listeners first seen before this are a baseline too. */
  baselineUntil: number;
  /**
   * The bucket of that first beat, when it was a baseline: the previous API process may have written this
   * node's gauges in it, so none are written there (a bucket never counts a node twice).
   */
  firstBucket: number;
  seenAt: number;
  listeners: Map<string, ListenerState>;
}

export interface TrafficDeltasOptions {
  /**
   * How long after a node's first beat in this process a listener seen for the first time is taken as a
   * baseline (its history counted nowhere), not as new: a node with many listeners reports them over several
   * beats. Default 120 s (the longest rotation of a full node is ~67 beats).
   */
  baselineMs?: number;
  /** A listener not reported for this long is taken as a baseline again (no burst after a silence). Default 300 s. */
  staleMs?: number;
  /** A node not heard of for this long is forgotten. Default 3600 s. */
  forgetMs?: number;
}

/**
 * Turns the nodes' cumulative counters into per-bucket deltas, remembering each node's previous beat.
 * The first beat of a node in this process is a baseline (the API restarted: the node's history must not
 * land in one bucket); a new boot id restarts every counter from its new value. Gauges: a node's value is
 * kept per bucket, so a bucket holds the sum over the nodes of their last value in it; a node that is gone
 * adds nothing to later buckets.
 */
export class TrafficDeltas {
  private readonly nodes = new Map<string, NodeState>();
  private readonly baselineMs: number;
  private readonly staleMs: number;
  private readonly forgetMs: number;
  private lastSweep = 0;

  constructor(options: TrafficDeltasOptions = {}) {
    this.baselineMs = options.baselineMs ?? 120_000;
    this.staleMs = options.staleMs ?? 300_000;
    this.forgetMs = options.forgetMs ?? 3_600_000;
  }

  /** The writes one heartbeat's report makes, at `nowMs`. */
  apply(nodeId: string, bootId: string, listeners: readonly ListenerTrafficReport[], nowMs: number): BucketWrite[] {
    this.sweep(nowMs);
    let node = this.nodes.get(nodeId);
    if (node === undefined) {
      node = {
        bootId,
        baselineUntil: nowMs + this.baselineMs,
        firstBucket: bucketOf(nowMs),
        seenAt: nowMs,
        listeners: new Map(),
      };
      this.nodes.set(nodeId, node);
    } else if (node.bootId !== bootId) {
      // Every counter starts again from its new value; the gauges stay, so this bucket still counts the node once.
      node.bootId = bootId;
      node.baselineUntil = 0;
      for (const state of node.listeners.values()) state.counters = null;
    }
    node.seenAt = nowMs;
    const bucket = bucketOf(nowMs);
    const writes: BucketWrite[] = [];
    for (const r of listeners) {
      const next = countersOf(r);
      const prev = node.listeners.get(r.id);
      const baseline = prev === undefined ? nowMs < node.baselineUntil : nowMs - prev.at > this.staleMs;
      const state = prev ?? { counters: null, at: nowMs, gaugeBucket: -1, gaugeValue: 0 };
      const delta = baseline ? null : counterDelta(state.counters ?? undefined, next);
      const counters = delta?.some((n) => n > 0) ? delta : null;
      const gauge = bucket === node.firstBucket ? null : gaugeChange(state, bucket, r.active);
      state.counters = next;
      state.at = nowMs;
      node.listeners.set(r.id, state);
      if (counters !== null || gauge !== null) {
        const http = r.responses !== undefined || r.upstreamMs !== undefined;
        writes.push({ listenerId: r.id, bucket, counters, gauge, http });
      }
    }
    return writes;
  }

  /** Nodes remembered (for tests and metrics). */
  get size(): number {
    return this.nodes.size;
  }

  private sweep(nowMs: number): void {
    if (nowMs - this.lastSweep < 60_000) return;
    this.lastSweep = nowMs;
    for (const [id, node] of this.nodes) if (nowMs - node.seenAt > this.forgetMs) this.nodes.delete(id);
  }
}

// ---- From stored buckets back to series.

/** Buckets of a range, summed over the listeners read into it (decodeHour adds an hour's records). */
export class BucketTable implements BucketSink {
  readonly size: number;
  /** Per counter (counter vector order), per bucket. */
  readonly counters: Float64Array[];
  readonly gauge: Float64Array;
  /** Some node reported in the bucket, and some node's gauge is in it. */
  readonly reported: Uint8Array;
  readonly gaugeSeen: Uint8Array;

  constructor(
    /** The first bucket (unix seconds). */
    readonly first: number,
    size: number,
  ) {
    this.size = size;
    this.counters = Array.from({ length: COUNTER_COUNT }, () => new Float64Array(size));
    this.gauge = new Float64Array(size);
    this.reported = new Uint8Array(size);
    this.gaugeSeen = new Uint8Array(size);
  }
}

/** The `p` quantile (0..1) of a histogram of UPSTREAM_TIME_BOUNDS_MS buckets, interpolated within its bucket. */
export function percentileMs(counts: ArrayLike<number>, p: number): number | null {
  let total = 0;
  for (let i = 0; i < counts.length; i++) total += counts[i]!;
  if (total <= 0) return null;
  const rank = p * total;
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    const n = counts[i]!;
    if (n > 0 && seen + n >= rank) {
      const lower = i === 0 ? 0 : UPSTREAM_TIME_BOUNDS_MS[i - 1]!;
      // Slower than the last bound: nothing to interpolate towards, the bound is the honest answer.
      if (i >= UPSTREAM_TIME_BOUNDS_MS.length) return lower;
      const upper = UPSTREAM_TIME_BOUNDS_MS[i]!;
      return lower + ((upper - lower) * Math.max(0, rank - seen)) / n;
    }
    seen += n;
  }
  return UPSTREAM_TIME_BOUNDS_MS[UPSTREAM_TIME_BOUNDS_MS.length - 1]!;
}

// ---- Queries.

export interface MetricsPlan {
  /** Unix seconds: the first point's start (aligned to the step), and the end (exclusive). */
  from: number;
  to: number;
  step: number;
  points: number;
}

export type MetricsPlanResult = { ok: true; plan: MetricsPlan } | { ok: false; field: string; detail: string };

/** Points when no step is asked for: the smallest step giving at most this many. */
export const DEFAULT_METRICS_POINTS = 360;
const DEFAULT_RANGE_SECONDS = 15 * 60;

/**
 * The range and step of a query, checked: `from` before `to`, within retention, at most MAX_METRICS_POINTS
 * points. Points are aligned to the step (a point's timestamp is a multiple of it).
 */
export function planMetricsQuery(q: { from?: string; to?: string; step?: number }, nowMs: number): MetricsPlanResult {
  const toMs = q.to === undefined ? nowMs : Date.parse(q.to);
  if (Number.isNaN(toMs)) return { ok: false, field: '/querystring/to', detail: '`to` is not a date-time' };
  const fromMs = q.from === undefined ? toMs - DEFAULT_RANGE_SECONDS * 1000 : Date.parse(q.from);
  if (Number.isNaN(fromMs)) return { ok: false, field: '/querystring/from', detail: '`from` is not a date-time' };
  if (fromMs >= toMs) return { ok: false, field: '/querystring/from', detail: '`from` must be before `to`' };
  const oldest = nowMs - METRICS_RETENTION_SECONDS * 1000;
  if (fromMs < oldest - METRICS_RESOLUTION_SECONDS * 1000) {
    return {
      ok: false,
      field: '/querystring/from',
      detail: `\`from\` is beyond the ${METRICS_RETENTION_SECONDS / 3600} h retention: the oldest is ${new Date(oldest).toISOString()}`,
    };
  }
  if (toMs > nowMs + 3600_000)
    return { ok: false, field: '/querystring/to', detail: '`to` is more than an hour in the future' };
  const range = (toMs - fromMs) / 1000;
  const res = METRICS_RESOLUTION_SECONDS;
  const step = q.step ?? Math.max(res, Math.ceil(range / DEFAULT_METRICS_POINTS / res) * res);
  if (step % res !== 0 || step < res)
    return { ok: false, field: '/querystring/step', detail: `\`step\` must be a multiple of ${res} seconds` };
  const from = Math.floor(fromMs / 1000 / step) * step;
  const to = Math.ceil(toMs / 1000);
  const points = Math.ceil((to - from) / step);
  if (points > MAX_METRICS_POINTS) {
    const least = Math.ceil(range / MAX_METRICS_POINTS / res) * res;
    return {
      ok: false,
      field: '/querystring/step',
      detail: `${points} points asked for, at most ${MAX_METRICS_POINTS}: use a step of at least ${least} s or a shorter range`,
    };
  }
  return { ok: true, plan: { from, to, step, points } };
}

/** The buckets a plan reads: from its first point to the end of its last. */
export function bucketsOf(plan: MetricsPlan): { first: number; count: number } {
  return { first: plan.from, count: (plan.points * plan.step) / METRICS_RESOLUTION_SECONDS };
}

/** The hour strings holding a plan's buckets: each hour, and its buckets [from, to) the plan reads. */
export function hoursOf(plan: MetricsPlan): { hour: number; from: number; to: number }[] {
  const { first, count } = bucketsOf(plan);
  const end = first + count * METRICS_RESOLUTION_SECONDS;
  const out: { hour: number; from: number; to: number }[] = [];
  for (let hour = hourOf(first); hour < end; hour += METRICS_HOUR_SECONDS) {
    out.push({
      hour,
      from: (Math.max(first, hour) - hour) / METRICS_RESOLUTION_SECONDS,
      to: (Math.min(end, hour + METRICS_HOUR_SECONDS) - hour) / METRICS_RESOLUTION_SECONDS,
    });
  }
  return out;
}

type Series = Omit<TrafficMetrics, 'loadBalancerId' | 'listenerId' | 'from' | 'to' | 'step'>;

/** The series of a plan from its bucket table; `http`: whether requests and upstream times apply. */
export function seriesOf(table: BucketTable, plan: MetricsPlan, http: boolean): Series {
  const per = plan.step / METRICS_RESOLUTION_SECONDS;
  const n = plan.points;
  const timestamps = new Array<number>(n);
  const mk = () => new Array<number | null>(n).fill(null);
  const out: Series = {
    timestamps,
    activeConnections: mk(),
    newConnectionsPerSecond: mk(),
    bytesInPerSecond: mk(),
    bytesOutPerSecond: mk(),
    droppedConnectionsPerSecond: mk(),
    requestsPerSecond: { '2xx': mk(), '3xx': mk(), '4xx': mk(), '5xx': mk() },
    upstreamTimeP50Ms: mk(),
    upstreamTimeP99Ms: mk(),
  };
  const rates = [
    out.newConnectionsPerSecond,
    out.bytesInPerSecond,
    out.bytesOutPerSecond,
    out.droppedConnectionsPerSecond,
    out.requestsPerSecond['2xx'],
    out.requestsPerSecond['3xx'],
    out.requestsPerSecond['4xx'],
    out.requestsPerSecond['5xx'],
  ];
  const sums = new Float64Array(COUNTER_COUNT);
  const histogram = new Float64Array(HISTOGRAM_SIZE);
  for (let p = 0; p < n; p++) {
    timestamps[p] = plan.from + p * plan.step;
    const start = p * per;
    const end = Math.min(start + per, table.size);
    let reported = false;
    let gaugeAt = -1;
    sums.fill(0);
    for (let b = start; b < end; b++) {
      if (table.reported[b] === 0) continue;
      reported = true;
      if (table.gaugeSeen[b] === 1) gaugeAt = b;
      for (let c = 0; c < sums.length; c++) sums[c]! += table.counters[c]![b]!;
    }
    if (!reported) continue;
    if (gaugeAt >= 0) out.activeConnections[p] = table.gauge[gaugeAt]!;
    const last = http ? rates.length : RESPONSES_AT;
    for (let c = 0; c < last; c++) rates[c]![p] = sums[c]! / plan.step;
    if (http) {
      for (let k = 0; k < HISTOGRAM_SIZE; k++) histogram[k] = sums[HISTOGRAM_AT + k]!;
      out.upstreamTimeP50Ms[p] = percentileMs(histogram, 0.5);
      out.upstreamTimeP99Ms[p] = percentileMs(histogram, 0.99);
    }
  }
  return out;
}
