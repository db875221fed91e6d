import {
  METRICS_RESOLUTION_SECONDS,
  METRICS_RETENTION_SECONDS,
  RESPONSE_CLASSES,
  UPSTREAM_TIME_BOUNDS_MS,
} from './traffic.js';

// How the API stores traffic buckets in Redis, with no I/O: one STRING per listener per hour, a fixed
// binary record per 10 s bucket at a fixed offset, added to with BITFIELD INCRBY (big-endian, saturating),
// read back with GETRANGE. The API does the I/O (apps/api control/traffic-ingest.ts, services/traffic-metrics.ts).
//
// An hour string is two planes, so a tcp/udp listener's string holds only what it uses:
//   base plane, every listener, 360 × 36 bytes from 0:
//     bytesIn i64 @0, bytesOut i64 @8, reported i32 @16, gauge writes i32 @20, gauge i32 @24,
//     conns i32 @28, drops i32 @32
//   http plane, http/https listeners only, 360 × 72 bytes from 12,960:
//     responses 2xx…5xx i32 @0…12, upstream-time histogram (14 buckets) i32 @16…68
// `reported` counts the writes to a bucket (0: no node reported, the answer's null, not zero); `gauge
// writes` counts the gauge changes written (a bucket may have counters and no gauge: a node's baseline).

/** Buckets stored together: one string per listener per hour. */
export const METRICS_HOUR_SECONDS = 3600;
export const BUCKETS_PER_HOUR = METRICS_HOUR_SECONDS / METRICS_RESOLUTION_SECONDS;
/** Kept this long past the end of an hour: retention, and an hour for clocks and slow queries. */
export const METRICS_TTL_MARGIN_SECONDS = 3600;

export const BASE_RECORD_BYTES = 36;
export const HTTP_RECORD_BYTES = 72;
/** Where the http plane starts; the size of a tcp/udp listener's hour string. */
export const HTTP_PLANE_AT = BUCKETS_PER_HOUR * BASE_RECORD_BYTES;
/** The size of an http/https listener's hour string. */
export const HOUR_STRING_BYTES = HTTP_PLANE_AT + BUCKETS_PER_HOUR * HTTP_RECORD_BYTES;

const BYTES_IN_AT = 0;
const BYTES_OUT_AT = 8;
const REPORTED_AT = 16;
const GAUGE_WRITES_AT = 20;
const GAUGE_AT = 24;
const CONNS_AT = 28;
const DROPS_AT = 32;

/**
 * The counters of a bucket, in the order of a counter vector: conns, bytesIn, bytesOut, drops, the
 * response classes, the upstream-time histogram.
 */
export const RESPONSES_AT = 4;
export const HISTOGRAM_AT = RESPONSES_AT + RESPONSE_CLASSES.length;
export const HISTOGRAM_SIZE = UPSTREAM_TIME_BOUNDS_MS.length + 1;
export const COUNTER_COUNT = HISTOGRAM_AT + HISTOGRAM_SIZE;
const BASE_COUNTER_AT = [CONNS_AT, BYTES_IN_AT, BYTES_OUT_AT, DROPS_AT];
const BASE_COUNTER_TYPE = ['i32', 'i64', 'i64', 'i32'];

/** The hour (unix seconds) a bucket is stored in, and the bucket's index in it. */
export function hourOf(bucket: number): number {
  return Math.floor(bucket / METRICS_HOUR_SECONDS) * METRICS_HOUR_SECONDS;
}

/** When an hour's string expires (unix seconds, for EXPIREAT). */
export function hourExpiresAt(hour: number): number {
  return hour + METRICS_HOUR_SECONDS + METRICS_RETENTION_SECONDS + METRICS_TTL_MARGIN_SECONDS;
}

/** What one heartbeat adds to one listener's bucket. */
export interface BucketWrite {
  listenerId: string;
  bucket: number;
  /** Counter increments (counter vector order), null when all are zero. */
  counters: number[] | null;
  /**
   * What to add to the bucket's gauge so that it holds this node's latest value (the difference from the
   * node's previous value in the same bucket, or the whole value for the first); null: leave it.
   */
  gauge: number | null;
  /** An http/https listener (its report had responses or upstream times): its string has the http plane. */
  http: boolean;
}

/**
 * The arguments after the key of the one BITFIELD command adding a write to its hour string. `sized`:
 * the first write of this hour string by this process; it also touches the string's last byte (INCRBY 0),
 * so Redis allocates the string at its final size at once rather than growing it (greedily) write by write.
 */
export function bitfieldArgs(w: BucketWrite, sized: boolean): (string | number)[] {
  const k = (w.bucket - hourOf(w.bucket)) / METRICS_RESOLUTION_SECONDS;
  const base = k * BASE_RECORD_BYTES * 8;
  const args: (string | number)[] = ['OVERFLOW', 'SAT', 'INCRBY', 'i32', base + REPORTED_AT * 8, 1];
  if (w.gauge !== null)
    args.push('INCRBY', 'i32', base + GAUGE_WRITES_AT * 8, 1, 'INCRBY', 'i32', base + GAUGE_AT * 8, w.gauge);
  const c = w.counters;
  if (c !== null) {
    for (let i = 0; i < RESPONSES_AT; i++) {
      if (c[i]! > 0) args.push('INCRBY', BASE_COUNTER_TYPE[i]!, base + BASE_COUNTER_AT[i]! * 8, c[i]!);
    }
    const http = (HTTP_PLANE_AT + k * HTTP_RECORD_BYTES) * 8;
    for (let i = RESPONSES_AT; i < COUNTER_COUNT; i++) {
      if (c[i]! > 0) args.push('INCRBY', 'i32', http + (i - RESPONSES_AT) * 32, c[i]!);
    }
  }
  if (sized) args.push('INCRBY', 'u8', ((w.http ? HOUR_STRING_BYTES : HTTP_PLANE_AT) - 1) * 8, 0);
  return args;
}

/** The byte ranges (inclusive, as GETRANGE takes them) of buckets [from, to) of an hour, per plane. */
export function hourRanges(from: number, to: number): { base: [number, number]; http: [number, number] } {
  return {
    base: [from * BASE_RECORD_BYTES, to * BASE_RECORD_BYTES - 1],
    http: [HTTP_PLANE_AT + from * HTTP_RECORD_BYTES, HTTP_PLANE_AT + to * HTTP_RECORD_BYTES - 1],
  };
}

/** Where decoded buckets are summed (BucketTable). */
export interface BucketSink {
  /** The first bucket (unix seconds) and the number of buckets. */
  readonly first: number;
  readonly size: number;
  /** Per counter (counter vector order), per bucket. */
  readonly counters: Float64Array[];
  readonly gauge: Float64Array;
  readonly reported: Uint8Array;
  readonly gaugeSeen: Uint8Array;
}

/**
 * Adds the records of an hour's buckets from index `from` on, as GETRANGE gave them (`base` from the base
 * plane, `http` from the http plane or null; either may be shorter, or empty: nothing written there), to
 * the sink; buckets outside the sink's range are skipped.
 */
export function decodeHour(
  sink: BucketSink,
  hour: number,
  from: number,
  base: Uint8Array,
  http: Uint8Array | null,
): void {
  // A string not sized at its first write may end inside a record: the rest of it is zeros.
  const b = viewOf(padded(base, BASE_RECORD_BYTES));
  const shift = (hour - sink.first) / METRICS_RESOLUTION_SECONDS + from;
  // The records landing in the sink: [r0, r1) of these, at shift + r.
  const r0 = Math.max(0, -shift);
  const r1 = Math.min(b.byteLength / BASE_RECORD_BYTES, sink.size - shift);
  // A bucket nobody wrote is all zeros, so every field is added without looking at `reported` (a field at
  // a time: the tight loops are several times faster than a record at a time).
  const column = (to: Float64Array, view: DataView, at: number, stride: number, end: number) => {
    for (let r = r0, o = r0 * stride + at; r < end; r++, o += stride) to[shift + r]! += view.getInt32(o);
  };
  const [conns, bytesIn, bytesOut, drops] = sink.counters as [Float64Array, Float64Array, Float64Array, Float64Array];
  for (let r = r0, o = r0 * BASE_RECORD_BYTES; r < r1; r++, o += BASE_RECORD_BYTES) {
    if (b.getInt32(o + REPORTED_AT) > 0) sink.reported[shift + r] = 1;
    if (b.getInt32(o + GAUGE_WRITES_AT) > 0) sink.gaugeSeen[shift + r] = 1;
    bytesIn[shift + r]! += b.getInt32(o + BYTES_IN_AT) * 4294967296 + b.getUint32(o + BYTES_IN_AT + 4);
    bytesOut[shift + r]! += b.getInt32(o + BYTES_OUT_AT) * 4294967296 + b.getUint32(o + BYTES_OUT_AT + 4);
  }
  column(conns, b, CONNS_AT, BASE_RECORD_BYTES, r1);
  column(drops, b, DROPS_AT, BASE_RECORD_BYTES, r1);
  column(sink.gauge, b, GAUGE_AT, BASE_RECORD_BYTES, r1);
  if (http === null) return;
  const h = viewOf(padded(http, HTTP_RECORD_BYTES));
  const end = Math.min(r1, h.byteLength / HTTP_RECORD_BYTES);
  for (let i = RESPONSES_AT; i < COUNTER_COUNT; i++) {
    column(sink.counters[i]!, h, (i - RESPONSES_AT) * 4, HTTP_RECORD_BYTES, end);
  }
}

const viewOf = (a: Uint8Array) => new DataView(a.buffer, a.byteOffset, a.byteLength);

function padded(a: Uint8Array, record: number): Uint8Array {
  if (a.byteLength % record === 0) return a;
  const out = new Uint8Array(Math.ceil(a.byteLength / record) * record);
  out.set(a);
  return out;
}
