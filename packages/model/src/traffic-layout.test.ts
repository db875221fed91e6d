import { describe, expect, it } from 'vitest';
import {
  BASE_RECORD_BYTES,
  BUCKETS_PER_HOUR,
  type BucketWrite,
  bitfieldArgs,
  COUNTER_COUNT,
  decodeHour,
  HOUR_STRING_BYTES,
  HTTP_PLANE_AT,
  HTTP_RECORD_BYTES,
  hourExpiresAt,
  hourOf,
  hourRanges,
} from './traffic-layout.js';
import { BucketTable } from './traffic-math.js';

const HOUR = Date.parse('2030-01-01T00:00:00Z') / 1000;

/**
 * What Redis's BITFIELD key OVERFLOW SAT INCRBY … does to a string, for byte-aligned i32/i64/u8 fields (the
 * only ones the layout uses): big-endian, saturating, the string grown with zeros to the highest offset.
 */
function applyBitfield(s: Uint8Array, args: readonly (string | number)[]): Uint8Array {
  expect(args.slice(0, 2)).toEqual(['OVERFLOW', 'SAT']);
  let out = s;
  for (let i = 2; i < args.length; i += 4) {
    expect(args[i]).toBe('INCRBY');
    const type = String(args[i + 1]);
    const bit = Number(args[i + 2]);
    const by = BigInt(args[i + 3]!);
    expect(bit % 8).toBe(0);
    const bytes = Number(type.slice(1)) / 8;
    const at = bit / 8;
    if (at + bytes > out.length) {
      const grown = new Uint8Array(at + bytes);
      grown.set(out);
      out = grown;
    }
    const view = new DataView(out.buffer);
    const signed = type[0] === 'i';
    const bits = BigInt(bytes * 8);
    const max = signed ? (1n << (bits - 1n)) - 1n : (1n << bits) - 1n;
    const min = signed ? -(1n << (bits - 1n)) : 0n;
    const get = () =>
      bytes === 8 ? view.getBigInt64(at) : bytes === 4 ? BigInt(view.getInt32(at)) : BigInt(view.getUint8(at));
    let v = get() + by;
    v = v > max ? max : v < min ? min : v;
    if (bytes === 8) view.setBigInt64(at, v);
    else if (bytes === 4) view.setInt32(at, Number(v));
    else view.setUint8(at, Number(v));
  }
  return out;
}

const vector = (set: Record<number, number>) => Array.from({ length: COUNTER_COUNT }, (_, i) => set[i] ?? 0);
const write = (bucket: number, counters: number[] | null, gauge: number | null, http = true): BucketWrite => ({
  listenerId: 'l',
  bucket,
  counters,
  gauge,
  http,
});
const planes = (s: Uint8Array) => [s.subarray(0, HTTP_PLANE_AT), s.subarray(HTTP_PLANE_AT)] as const;

describe('hour strings', () => {
  it('are 360 records of 36 bytes, then (http) 360 of 72, and expire after retention and a margin', () => {
    expect(BUCKETS_PER_HOUR).toBe(360);
    expect(HTTP_PLANE_AT).toBe(360 * BASE_RECORD_BYTES);
    expect(HOUR_STRING_BYTES).toBe(HTTP_PLANE_AT + 360 * HTTP_RECORD_BYTES);
    expect(hourOf(HOUR + 3599)).toBe(HOUR);
    expect(hourExpiresAt(HOUR)).toBe(HOUR + 3600 + 86_400 + 3600);
  });

  it('writes only what changed: the reported count always, the gauge and non-zero counters when there', () => {
    expect(bitfieldArgs(write(HOUR + 10, null, 0), false)).toEqual([
      'OVERFLOW',
      'SAT',
      'INCRBY',
      'i32',
      (36 + 16) * 8,
      1,
      'INCRBY',
      'i32',
      (36 + 20) * 8,
      1,
      'INCRBY',
      'i32',
      (36 + 24) * 8,
      0,
    ]);
    const args = bitfieldArgs(write(HOUR, vector({ 1: 5_000_000_000, 4: 3 }), null), false);
    expect(args.slice(6)).toEqual(['INCRBY', 'i64', 0, 5_000_000_000, 'INCRBY', 'i32', HTTP_PLANE_AT * 8, 3]);
  });

  it('sizes a string at its first write: the base plane for tcp/udp, both planes for http', () => {
    const tcp = applyBitfield(new Uint8Array(0), bitfieldArgs(write(HOUR, vector({ 0: 1 }), 1, false), true));
    expect(tcp.length).toBe(HTTP_PLANE_AT);
    const http = applyBitfield(new Uint8Array(0), bitfieldArgs(write(HOUR, null, 1, true), true));
    expect(http.length).toBe(HOUR_STRING_BYTES);
  });

  it('reads back what was written, summing listeners, with buckets nobody wrote left unreported', () => {
    let s: Uint8Array = new Uint8Array(0);
    const last = HOUR + 3590;
    s = applyBitfield(s, bitfieldArgs(write(HOUR + 20, vector({ 0: 7, 1: 2 ** 40 + 3, 2: 9, 3: 1 }), 5), true));
    s = applyBitfield(s, bitfieldArgs(write(HOUR + 20, null, -2), false)); // the node's gauge moved in the bucket
    s = applyBitfield(s, bitfieldArgs(write(last, vector({ 4: 100, 7: 2, 8: 1, 21: 4 }), null), false));
    const table = new BucketTable(HOUR, 360);
    decodeHour(table, HOUR, 0, ...planes(s));
    decodeHour(table, HOUR, 0, ...planes(s)); // a second listener, the same
    expect([table.reported[1], table.reported[2], table.reported[359]]).toEqual([0, 1, 1]);
    expect([...table.counters.map((c) => c[2])]).toEqual(vector({ 0: 14, 1: 2 ** 41 + 6, 2: 18, 3: 2 }));
    expect([table.gauge[2], table.gaugeSeen[2], table.gaugeSeen[359]]).toEqual([6, 1, 0]);
    expect(table.counters.map((c) => c[359])).toEqual(vector({ 4: 200, 7: 4, 8: 2, 21: 8 }));
    expect(table.reported.reduce((a, b) => a + b, 0)).toBe(2);
  });

  it('saturates rather than wraps', () => {
    let s: Uint8Array = new Uint8Array(0);
    for (let i = 0; i < 3; i++)
      s = applyBitfield(s, bitfieldArgs(write(HOUR, vector({ 0: 2 ** 31 - 10 }), null), false));
    const table = new BucketTable(HOUR, 1);
    decodeHour(table, HOUR, 0, ...planes(s));
    expect(table.counters[0]![0]).toBe(2 ** 31 - 1);
  });

  it('decodes the ranges of a partial hour into the table’s place, and short or empty strings', () => {
    let s: Uint8Array = new Uint8Array(0);
    s = applyBitfield(s, bitfieldArgs(write(HOUR + 100, vector({ 0: 1, 4: 2 }), 3), true));
    s = applyBitfield(s, bitfieldArgs(write(HOUR + 200, vector({ 0: 5 }), null), false));
    // A table from HOUR + 90 of 5 buckets: buckets 9 … 13 of the hour.
    const { base, http } = hourRanges(9, 14);
    const table = new BucketTable(HOUR + 90, 5);
    decodeHour(table, HOUR, 9, s.subarray(base[0], base[1] + 1), s.subarray(http[0], http[1] + 1));
    expect([...table.reported]).toEqual([0, 1, 0, 0, 0]);
    expect([table.counters[0]![1], table.counters[4]![1], table.gauge[1]]).toEqual([1, 2, 3]);
    // A missing key (GETRANGE gives an empty string), and a tcp string with no http plane.
    decodeHour(table, HOUR, 9, new Uint8Array(0), new Uint8Array(0));
    decodeHour(table, HOUR, 9, s.subarray(base[0], base[1] + 1), null);
    expect([table.counters[0]![1], table.counters[4]![1]]).toEqual([2, 2]);
  });
});
