// A backend's usual response head, checked and rewritten on its bytes, pure. The string path (parseResponseHead,
// responseHeadersToClient, serializeHead) made a string per line, name and value, a list of them, and a
// concatenated head to write: a quarter of the instructions the node spent per proxied request (bench/README,
// "Heads on their bytes"). Here the lines the client gets unchanged are copied as byte ranges. Only heads this
// is sure of take it; anything else (a 1xx, a Connection option other than close and keep-alive, a second
// Content-Length or Transfer-Encoding, any coding but chunked, a kept line not written `name: value`, anything
// malformed) returns null and goes the string path, which stays the rule: it decides whether such a head is
// refused, and the differential test holds this path to its output on every head this one accepts.

import { Buffer } from 'node:buffer';
import {
  addRange,
  connectionOptions,
  digitsValue,
  eachElement,
  FieldCursor,
  headEndAfter,
  linesLength,
  putBytes,
  putLatin1,
  putLinesAndEnd,
  putRanges,
  rangesLength,
} from './head-bytes.js';
import { VALUE_CHAR } from './http1-parser.js';
import { bytesMatch } from './tokens.js';

/** A head scanned by {@link scanResponseHead}; `extra` takes the lines the node adds (flat [name, value, …]). */
export class BytesResponseHead {
  /** Lines added after the kept ones, in order (sticky cookie, framing, Connection: close). */
  readonly extra: string[] = [];

  constructor(
    /** The bytes the head was read from; valid only until the read that brought it returns. */
    readonly src: Buffer,
    /** Where the head's CRLF CRLF starts: the body follows at `end + 4`. */
    readonly end: number,
    readonly status: number,
    /** End of the status line (its CR): status code and reason are `src[9..statusEnd)`. */
    readonly statusEnd: number,
    /** -1 when the response has no Content-Length. */
    readonly contentLength: number,
    readonly chunked: boolean,
    readonly keepAlive: boolean,
    readonly setCookies: string[],
    /** [start, end) ranges of `src` holding the field lines kept, CRLFs included (adjacent lines merged). */
    readonly ranges: number[],
  ) {}
}

const isChunked = (buf: Buffer, s: number, e: number): boolean => e - s === 7 && bytesMatch(buf, s, 'chunked');

/** What a field line is to the rewrite, by its name. */
const KEEP = 0;
const DROP = 1;
const CONNECTION = 2;
const CONTENT_LENGTH = 3;
const TRANSFER_ENCODING = 4;
const SET_COOKIE = 5;

/** The hop-by-hop names (headers.ts) and the ones the rewrite reads, by length, then by bytes. */
function kindOf(buf: Buffer, at: number, len: number): number {
  switch (len) {
    case 2:
      return bytesMatch(buf, at, 'te') ? DROP : KEEP;
    case 7:
      return bytesMatch(buf, at, 'trailer') || bytesMatch(buf, at, 'upgrade') ? DROP : KEEP;
    case 10:
      if (bytesMatch(buf, at, 'connection')) return CONNECTION;
      if (bytesMatch(buf, at, 'keep-alive')) return DROP;
      return bytesMatch(buf, at, 'set-cookie') ? SET_COOKIE : KEEP;
    case 14:
      if (bytesMatch(buf, at, 'content-length')) return CONTENT_LENGTH;
      return bytesMatch(buf, at, 'http2-settings') ? DROP : KEEP;
    case 16:
      return bytesMatch(buf, at, 'proxy-connection') ? DROP : KEEP;
    case 17:
      return bytesMatch(buf, at, 'transfer-encoding') ? TRANSFER_ENCODING : KEEP;
    default:
      return KEEP;
  }
}

const field = new FieldCursor();

/**
 * Scans a response head at the start of `src` for the byte path, up to its CRLF CRLF (whose start is the result's
 * `end`), without a search for that end first. Null when the head is not whole in `src` or not one this path is
 * sure of: the caller then searches for the end and takes the string path, which parses, refuses or rewrites it.
 */
export function scanResponseHead(src: Buffer): BytesResponseHead | null {
  const n = src.length;
  // Status line: HTTP/1.x SP 3 digits [SP reason], as parseResponseHead's STATUS_LINE.
  if (n < 16 || !bytesMatch(src, 0, 'HTTP/1.') || src[8] !== 32) return null;
  const minor = src[7]!;
  if (minor !== 48 && minor !== 49) return null;
  const d0 = src[9]! - 48;
  const d1 = src[10]! - 48;
  const d2 = src[11]! - 48;
  // 1xx answers go the string path (they are followed by another head).
  if (d0 < 2 || d0 > 9 || d1 < 0 || d1 > 9 || d2 < 0 || d2 > 9) return null;
  let i = 12;
  // A status without a reason may end its line right after the code.
  if (!(src[i] === 13 && src[i + 1] === 10)) {
    if (src[i] !== 32) return null;
    for (i++; i < n; i++) {
      if (VALUE_CHAR[src[i]!] !== 1) {
        if (src[i] === 13 && i + 1 < n && src[i + 1] === 10) break;
        return null;
      }
    }
    if (i === n) return null;
  }
  const statusEnd = i;
  let keepAlive = minor === 49;
  let contentLength = -1;
  let chunked = false;
  let te = false;
  const setCookies: string[] = [];
  const ranges: number[] = [];
  const f = field;
  let end: number;
  // `i` is where the last line read ends (its CRLF).
  for (;;) {
    end = headEndAfter(src, i, n);
    if (end >= 0) break;
    if (end === -2 || !f.read(src, i + 2, n)) return null;
    i = f.lineEnd;
    const a = f.valueStart;
    const b = f.valueEnd;
    switch (kindOf(src, f.lineStart, f.nameLength)) {
      case KEEP:
        break;
      case DROP:
        continue;
      case CONNECTION: {
        const options = connectionOptions(src, a, b);
        if (options < 0) return null;
        if (options === 1) keepAlive = false;
        continue;
      }
      case CONTENT_LENGTH:
        if (contentLength >= 0) return null;
        contentLength = digitsValue(src, a, b);
        if (contentLength < 0) return null;
        continue;
      case TRANSFER_ENCODING:
        if (te || eachElement(src, a, b, isChunked) !== 1) return null;
        te = chunked = true;
        continue;
      case SET_COOKIE:
        setCookies.push(f.value(src));
        break;
    }
    // Kept: the line with its CRLF.
    if (!f.canonical(src)) return null;
    addRange(ranges, f.lineStart, f.lineEnd + 2);
  }
  if (chunked && contentLength >= 0) return null;
  const status = d0 * 100 + d1 * 10 + d2;
  return new BytesResponseHead(src, end, status, statusEnd, contentLength, chunked, keepAlive, setCookies, ranges);
}

const VERSION = 'HTTP/1.1 ';

/**
 * The head for the client, and the body bytes `body[from..to)` after it (a few, or none) in the same buffer:
 * HTTP/1.1, the status line's code and reason, the kept lines, the added ones, the empty line. As serializeHead
 * of the string path's list.
 */
export function writeResponseHead(h: BytesResponseHead, body: Buffer, from: number, to: number): Buffer {
  const { src, ranges, extra, statusEnd } = h;
  const bare = statusEnd === 12;
  const size =
    VERSION.length + (statusEnd - 9) + (bare ? 1 : 0) + 2 + rangesLength(ranges) + linesLength(extra) + 2 + (to - from);
  const out = Buffer.allocUnsafe(size);
  let o = putLatin1(out, 0, VERSION);
  o = putBytes(out, o, src, 9, statusEnd);
  // The string path writes `${status} ${reason}`: a bare status still gets its space.
  if (bare) out[o++] = 32;
  out[o++] = 13;
  out[o++] = 10;
  o = putRanges(out, o, src, ranges);
  o = putLinesAndEnd(out, o, extra);
  putBytes(out, o, body, from, to);
  return out;
}
