// A client's usual request head, checked on its bytes and rewritten toward the backend, pure: the request line
// and the lines the backend gets unchanged are copied as byte ranges, and the node's forwarding lines added
// (as response-head-bytes.ts does for responses; bench/README, "Heads on their bytes"). Only heads this is sure
// of take it. Anything else returns null and goes the string path (parseRequestHead, requestHeadersToBackend),
// which stays the rule and decides: served, handed to node:http or refused. That is any head with Expect,
// Upgrade, Transfer-Encoding, a second Host or Content-Length, a Connection option other than close and
// keep-alive, a kept line not written `name: value`, or anything malformed. The differential test holds this
// path to the string path's output on every head it accepts.

import { Buffer } from 'node:buffer';
import {
  addRange,
  connectionOptions,
  digitsValue,
  FieldCursor,
  headEndAfter,
  linesLength,
  putBytes,
  putLinesAndEnd,
  putRanges,
  rangesLength,
} from './head-bytes.js';
import { type ForwardingInfo, pushForwardingHeaders } from './headers.js';
import { type RequestFacts, TCHAR } from './http1-parser.js';
import { bytesMatch } from './tokens.js';

/** A head scanned by {@link scanRequestHead}. */
export class BytesRequestHead implements RequestFacts {
  constructor(
    /** The bytes the head was read from; read only until the exchange's start() has written its head. */
    readonly src: Buffer,
    /** Where the head's CRLF CRLF starts: a body or the next request follows at `end + 4`. */
    readonly end: number,
    /** Where the request line's CRLF starts. */
    readonly lineEnd: number,
    readonly method: string,
    readonly target: string,
    readonly contentLength: number,
    readonly host: string,
    readonly cookie: string[] | undefined,
    readonly close: boolean,
    /** [start, end) ranges of `src` holding the field lines kept, CRLFs included (adjacent lines merged). */
    readonly ranges: number[],
    /** The client's X-Forwarded-For values joined with ", " (append mode keeps them), or undefined. */
    readonly clientXff: string | undefined,
  ) {}
}

/** What a field line is to the rewrite, by its name. */
const KEEP = 0;
const DROP = 1;
/** The string path does not serve it here (node:http does, or refuses it). */
const NOT_HERE = 2;
const HOST = 3;
const COOKIE = 4;
const CONNECTION = 5;
const CONTENT_LENGTH = 6;
const XFF = 7;

/**
 * The hop-by-hop names and those the node owns (headers.ts: HOP_BY_HOP, NODE_OWNED), and the ones the parse
 * reads, by length, then by bytes.
 */
function kindOf(buf: Buffer, at: number, len: number): number {
  switch (len) {
    case 2:
      return bytesMatch(buf, at, 'te') ? DROP : KEEP;
    case 4:
      return bytesMatch(buf, at, 'host') ? HOST : KEEP;
    case 6:
      if (bytesMatch(buf, at, 'cookie')) return COOKIE;
      return bytesMatch(buf, at, 'expect') ? NOT_HERE : KEEP;
    case 7:
      if (bytesMatch(buf, at, 'upgrade')) return NOT_HERE;
      return bytesMatch(buf, at, 'trailer') ? DROP : KEEP;
    case 9:
      return bytesMatch(buf, at, 'x-real-ip') || bytesMatch(buf, at, 'forwarded') ? DROP : KEEP;
    case 10:
      if (bytesMatch(buf, at, 'connection')) return CONNECTION;
      return bytesMatch(buf, at, 'keep-alive') ? DROP : KEEP;
    case 11:
      return bytesMatch(buf, at, 'x-client-ip') ? DROP : KEEP;
    case 14:
      if (bytesMatch(buf, at, 'content-length')) return CONTENT_LENGTH;
      return bytesMatch(buf, at, 'http2-settings') || bytesMatch(buf, at, 'true-client-ip') ? DROP : KEEP;
    case 15:
      return bytesMatch(buf, at, 'x-forwarded-for') ? XFF : KEEP;
    case 16:
      return bytesMatch(buf, at, 'proxy-connection') ||
        bytesMatch(buf, at, 'x-forwarded-port') ||
        bytesMatch(buf, at, 'x-forwarded-host')
        ? DROP
        : KEEP;
    case 17:
      if (bytesMatch(buf, at, 'transfer-encoding')) return NOT_HERE;
      return bytesMatch(buf, at, 'x-forwarded-proto') ? DROP : KEEP;
    default:
      return KEEP;
  }
}

/** The method as a string; the usual ones without a copy of their bytes. */
function methodOf(src: Buffer, end: number): string {
  if (end === 3 && src[0] === 71 && src[1] === 69 && src[2] === 84) return 'GET';
  if (end === 4 && src[0] === 80 && src[1] === 79 && src[2] === 83 && src[3] === 84) return 'POST';
  return src.toString('latin1', 0, end);
}

const HTTP11 = ' HTTP/1.1';
const field = new FieldCursor();

/**
 * Scans a request head at the start of `src` for the byte path, up to its CRLF CRLF (whose start is the result's
 * `end`), without a search for that end first. Null when the head is not whole in `src` or not one this path is
 * sure of: the caller then searches for the end and takes the string path.
 */
export function scanRequestHead(src: Buffer): BytesRequestHead | null {
  const n = src.length;
  // Request line, as parseRequestHead's REQUEST_LINE: token SP origin-form (visible ASCII) SP HTTP/1.1.
  let i = 0;
  while (i < n && TCHAR[src[i]!] === 1) i++;
  const methodEnd = i;
  if (methodEnd === 0 || src[i] !== 32 || src[i + 1] !== 47 /* / */) return null;
  const targetStart = ++i;
  while (i < n && src[i]! >= 0x21 && src[i]! <= 0x7e) i++;
  const targetEnd = i;
  if (n - i < HTTP11.length + 2) return null;
  for (let k = 0; k < HTTP11.length; k++) if (src[i + k] !== HTTP11.charCodeAt(k)) return null;
  i += HTTP11.length;
  if (src[i] !== 13 || src[i + 1] !== 10) return null;
  const lineEnd = i;
  let contentLength = -1;
  let host: string | undefined;
  let cookie: string[] | undefined;
  let close = false;
  let clientXff: string | undefined;
  const ranges: number[] = [];
  const f = field;
  let end: number;
  // `i` is where the last line read ends (its CRLF).
  for (;;) {
    end = headEndAfter(src, i, n);
    if (end >= 0) break;
    if (end === -2 || !f.read(src, i + 2, n)) return null;
    i = f.lineEnd;
    switch (kindOf(src, f.lineStart, f.nameLength)) {
      case KEEP:
        break;
      case DROP:
        continue;
      case NOT_HERE:
        return null;
      case HOST:
        if (host !== undefined) return null;
        host = f.value(src);
        break;
      case COOKIE:
        cookie ??= [];
        cookie.push(f.value(src));
        break;
      case CONNECTION: {
        const options = connectionOptions(src, f.valueStart, f.valueEnd);
        if (options < 0) return null;
        if (options === 1) close = true;
        continue;
      }
      case CONTENT_LENGTH:
        if (contentLength >= 0) return null;
        contentLength = digitsValue(src, f.valueStart, f.valueEnd);
        if (contentLength < 0) return null;
        break;
      case XFF: {
        const v = f.value(src);
        clientXff = clientXff === undefined ? v : `${clientXff}, ${v}`;
        continue;
      }
    }
    // Kept: the line with its CRLF.
    if (!f.canonical(src)) return null;
    addRange(ranges, f.lineStart, f.lineEnd + 2);
  }
  if (host === undefined) return null;
  const method = methodOf(src, methodEnd);
  const target = src.toString('latin1', targetStart, targetEnd);
  return new BytesRequestHead(
    src,
    end,
    lineEnd,
    method,
    target,
    Math.max(contentLength, 0),
    host,
    cookie,
    close,
    ranges,
    clientXff,
  );
}

/**
 * The node's forwarding lines toward the backend as bytes (`name: value\r\n` each), as requestHeadersToBackend
 * adds them. They depend only on the client's connection and the listener, so a connection makes them once
 * (FastConnection.forwardingLines); only a client's own X-Forwarded-For in `append` mode needs its own.
 */
export function forwardingLines(fwd: ForwardingInfo, clientXff: string | undefined): Buffer {
  const lines: string[] = [];
  pushForwardingHeaders(lines, fwd, clientXff);
  const out = Buffer.allocUnsafe(linesLength(lines) + 2);
  putLinesAndEnd(out, 0, lines);
  return out.subarray(0, out.length - 2);
}

/**
 * The head for the backend: the request line and the kept lines as they came, then the node's forwarding
 * lines (from {@link forwardingLines}), the empty line. As serializeHead of requestHeadersToBackend's list.
 */
export function writeRequestHead(h: BytesRequestHead, forwarding: Buffer): Buffer {
  const out = Buffer.allocUnsafe(h.lineEnd + 2 + rangesLength(h.ranges) + forwarding.length + 2);
  let o = putBytes(out, 0, h.src, 0, h.lineEnd + 2);
  o = putRanges(out, o, h.src, h.ranges);
  o = putBytes(out, o, forwarding, 0, forwarding.length);
  out[o++] = 13;
  out[o] = 10;
  return out;
}
