// What the byte paths for request and response heads (request-head-bytes.ts, response-head-bytes.ts) share, pure:
// the field-line scan of http1-parser.ts on bytes, comma lists, digits, and copying into the head written out.

import type { Buffer } from 'node:buffer';
import { TCHAR, VALUE_CHAR } from './http1-parser.js';
import { bytesMatch } from './tokens.js';

const isOws = (c: number): boolean => c === 32 || c === 9;

/**
 * One field line at a time, as scanFields: a token name, the colon right after it, a value of VALUE_CHARs (no
 * CTL but HTAB), CRLF. One object per scan, reused for each line, so a line costs no allocation.
 */
export class FieldCursor {
  /** First byte of the line (of its name). */
  lineStart = 0;
  nameEnd = 0;
  /** The value without surrounding SP and HTAB: `[valueStart, valueEnd)`. */
  valueStart = 0;
  valueEnd = 0;
  /** Where the line's CRLF starts. */
  lineEnd = 0;

  /**
   * Reads the field line starting at `at`, which follows a CRLF, ending with its own CRLF before `limit`. False
   * when the line is malformed or not whole.
   */
  read(src: Buffer, at: number, limit: number): boolean {
    let j = at;
    while (j < limit && TCHAR[src[j]!] === 1) j++;
    if (j === at || j === limit || src[j] !== 58 /* : */) return false;
    this.lineStart = at;
    this.nameEnd = j;
    let a = ++j;
    for (; j < limit; j++) {
      const c = src[j]!;
      if (VALUE_CHAR[c] !== 1) {
        if (c === 13 && j + 1 < limit && src[j + 1] === 10) break;
        return false;
      }
    }
    if (j === limit) return false;
    let b = j;
    while (a < b && isOws(src[a]!)) a++;
    while (b > a && isOws(src[b - 1]!)) b--;
    this.valueStart = a;
    this.valueEnd = b;
    this.lineEnd = j;
    return true;
  }

  get nameLength(): number {
    return this.nameEnd - this.lineStart;
  }

  /**
   * The line is written as the string paths write a line they keep (`name: value`): one space after the
   * colon and none after the value. A line the byte paths copy must be, or the copy would differ.
   */
  canonical(src: Buffer): boolean {
    return this.valueStart === this.nameEnd + 2 && src[this.nameEnd + 1] === 32 && this.valueEnd === this.lineEnd;
  }

  value(src: Buffer): string {
    return src.toString('latin1', this.valueStart, this.valueEnd);
  }
}

/**
 * Calls `each` with the bounds of every non-empty element of the comma list `buf[a..b)`, trimmed of SP and HTAB
 * (as listTokens), and stops at the first it returns false for. Returns how many it saw, -1 when stopped.
 */
export function eachElement(
  buf: Buffer,
  a: number,
  b: number,
  each: (buf: Buffer, s: number, e: number) => boolean,
): number {
  let count = 0;
  for (let i = a; i <= b; ) {
    let end = i;
    while (end < b && buf[end] !== 44 /* , */) end++;
    let s = i;
    let e = end;
    while (s < e && isOws(buf[s]!)) s++;
    while (e > s && isOws(buf[e - 1]!)) e--;
    if (e > s) {
      if (!each(buf, s, e)) return -1;
      count++;
    }
    i = end + 1;
  }
  return count;
}

/**
 * After a line whose CRLF starts at `i`: the head's end (where its CRLF CRLF starts, `i`) when an empty line
 * follows, -1 when a field line does, -2 when the bytes stop first (the head is not whole here).
 */
export function headEndAfter(src: Buffer, i: number, limit: number): number {
  if (i + 3 >= limit) return -2;
  return src[i + 2] === 13 && src[i + 3] === 10 ? i : -1;
}

const isClose = (buf: Buffer, s: number, e: number): boolean => e - s === 5 && bytesMatch(buf, s, 'close');

/** Set by {@link isHopOption} when it meets `close` (one pass over the list answers both questions). */
let sawClose = false;

/** Connection options that only say what happens to this hop; any other names a header to drop. */
function isHopOption(buf: Buffer, s: number, e: number): boolean {
  if (isClose(buf, s, e)) {
    sawClose = true;
    return true;
  }
  return e - s === 10 && bytesMatch(buf, s, 'keep-alive');
}

/** Connection's value on a byte path: -1 when it names a header (the string path drops it), 1 with close, else 0. */
export function connectionOptions(buf: Buffer, a: number, b: number): number {
  sawClose = false;
  if (eachElement(buf, a, b, isHopOption) < 0) return -1;
  return sawClose ? 1 : 0;
}

/** Content-Length's value: 1 to 15 digits (as http1-parser's DIGITS), or -1. */
export function digitsValue(buf: Buffer, a: number, b: number): number {
  if (b <= a || b - a > 15) return -1;
  let n = 0;
  for (let i = a; i < b; i++) {
    const d = buf[i]! - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/**
 * Appends `[start, end)` to a list of ranges, merged with the last one when they touch (the lines kept between
 * two dropped ones are one copy).
 */
export function addRange(ranges: number[], start: number, end: number): void {
  const n = ranges.length;
  if (n > 0 && ranges[n - 1] === start) ranges[n - 1] = end;
  else ranges.push(start, end);
}

export function rangesLength(ranges: readonly number[]): number {
  let size = 0;
  for (let k = 0; k < ranges.length; k += 2) size += ranges[k + 1]! - ranges[k]!;
  return size;
}

/** Bytes of flat [name, value, …] lines as `name: value\r\n`. */
export function linesLength(lines: readonly string[]): number {
  let size = 0;
  for (let k = 0; k < lines.length; k++) size += lines[k]!.length + 2;
  return size;
}

/**
 * Copies `src[a..b)` to `out` at `at`; returns the end. A loop for a few bytes (a status, a small body): Buffer's
 * copy() costs more per call than the loop for them, and less from about 32 bytes on (bench/l7-heads.mjs).
 */
export function putBytes(out: Buffer, at: number, src: Buffer, a: number, b: number): number {
  if (b - a > 32) return at + src.copy(out, at, a, b);
  for (let i = a; i < b; i++) out[at++] = src[i]!;
  return at;
}

export function putRanges(out: Buffer, at: number, src: Buffer, ranges: readonly number[]): number {
  for (let k = 0; k < ranges.length; k += 2) at = putBytes(out, at, src, ranges[k]!, ranges[k + 1]!);
  return at;
}

export function putLatin1(out: Buffer, at: number, s: string): number {
  for (let i = 0; i < s.length; i++) out[at + i] = s.charCodeAt(i);
  return at + s.length;
}

/** Writes flat [name, value, …] lines as `name: value\r\n`, then the empty line; returns the end. */
export function putLinesAndEnd(out: Buffer, at: number, lines: readonly string[]): number {
  let o = at;
  for (let k = 0; k < lines.length; k += 2) {
    o = putLatin1(out, o, lines[k]!);
    out[o++] = 58;
    out[o++] = 32;
    o = putLatin1(out, o, lines[k + 1]!);
    out[o++] = 13;
    out[o++] = 10;
  }
  out[o++] = 13;
  out[o++] = 10;
  return o;
}
