// Strict HTTP/1.1 head parsing for the raw-socket fast path, pure. It accepts only what it is sure of:
// anything odd is not repaired but refused, and the caller hands the connection to node:http (requests)
// or answers 502 (responses). Heads arrive as latin1 strings without their final CRLF CRLF, so bytes
// 0x80-0xff survive a round trip unchanged.

import { hasToken, isName } from './tokens.js';

// RFC 9110 §5.6.2: tchar. The target is origin-form of visible ASCII only (no spaces, no CTLs).
const REQUEST_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) (\/[\x21-\x7e]*) HTTP\/1\.1$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing CTLs is the point
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: ([^\x00-\x08\x0a-\x1f\x7f]*))?$/;
const DIGITS = /^\d{1,15}$/;

// A field line: token name, colon right after it (no space), value without CTLs but HTAB. A line starting
// with SP/HTAB (obs-fold) or holding a bare CR or LF is refused. Checked by one scan of the head with these
// tables (a head arrives as latin1, so every char code is below 256), not a regex and a split per line.
export const TCHAR = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~") TCHAR[c.charCodeAt(0)] = 1;
for (let c = 48; c <= 57; c++) TCHAR[c] = 1;
for (let c = 65; c <= 90; c++) TCHAR[c] = TCHAR[c + 32] = 1;
export const VALUE_CHAR = new Uint8Array(256).fill(1);
for (let c = 0; c <= 0x1f; c++) if (c !== 9) VALUE_CHAR[c] = 0;
VALUE_CHAR[0x7f] = 0;

/**
 * Scans the field lines after the first line of `head` (which ends at `lineEnd`, -1 when it is the only
 * line) into `out` as [name, value, …], values without surrounding SP/HTAB. False when a line is malformed.
 */
function scanFields(head: string, lineEnd: number, out: string[]): boolean {
  if (lineEnd < 0) return true;
  const n = head.length;
  let i = lineEnd + 2;
  for (;;) {
    // After every CRLF a field line follows: an empty one fails here.
    const nameStart = i;
    while (i < n && TCHAR[head.charCodeAt(i)] === 1) i++;
    if (i === nameStart || i === n || head.charCodeAt(i) !== 58 /* : */) return false;
    const name = head.slice(nameStart, i);
    let a = ++i;
    for (; i < n; i++) {
      const c = head.charCodeAt(i);
      if (VALUE_CHAR[c] !== 1) {
        if (c === 13 && head.charCodeAt(i + 1) === 10) break;
        return false;
      }
    }
    let b = i;
    while (a < b && (head.charCodeAt(a) === 32 || head.charCodeAt(a) === 9)) a++;
    while (b > a && (head.charCodeAt(b - 1) === 32 || head.charCodeAt(b - 1) === 9)) b--;
    out.push(name, head.slice(a, b));
    if (i === n) return true;
    i += 2;
  }
}

/** What a request's head says, on either path (this parser's strings, or request-head-bytes.ts). */
export interface RequestFacts {
  readonly method: string;
  readonly target: string;
  /** Request body length; 0 when there is no Content-Length. */
  readonly contentLength: number;
  readonly host: string;
  readonly cookie: string[] | undefined;
  /** The client asked to close after this exchange (Connection: close). */
  readonly close: boolean;
}

export interface RequestHead extends RequestFacts {
  /** Flat [name, value, …] as received (values without surrounding whitespace). */
  readonly headers: string[];
}

export type RequestParse =
  | { readonly fast: true; readonly head: RequestHead }
  /** `refuse`: the request is invalid whoever parses it; the caller answers 400 itself. */
  | { readonly fast: false; readonly why: string; readonly refuse?: true };

function trimOws(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s.charCodeAt(a) === 32 || s.charCodeAt(a) === 9)) a++;
  while (b > a && (s.charCodeAt(b - 1) === 32 || s.charCodeAt(b - 1) === 9)) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

/** Lower-cased, trimmed, non-empty tokens of a comma list (Connection, Transfer-Encoding). */
function listTokens(value: string): string[] {
  const out: string[] = [];
  for (const t of value.split(',')) {
    const v = trimOws(t).toLowerCase();
    if (v) out.push(v);
  }
  return out;
}

/**
 * Parses a request head for the fast path. `fast: false` means "let node:http decide": the head is
 * malformed (node answers 400) or valid but unusual (HTTP/1.0, Transfer-Encoding, Upgrade, Expect, …).
 */
export function parseRequestHead(head: string): RequestParse {
  const lineEnd = head.indexOf('\r\n');
  const m = REQUEST_LINE.exec(lineEnd < 0 ? head : head.slice(0, lineEnd));
  if (!m) return { fast: false, why: 'request line' };
  const headers: string[] = [];
  if (!scanFields(head, lineEnd, headers)) return { fast: false, why: 'field line' };
  let contentLength = -1;
  let host: string | undefined;
  let hosts = 0;
  let cookie: string[] | undefined;
  let close = false;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    const value = headers[i + 1]!;
    switch (name.length) {
      case 4:
        if (name.toLowerCase() === 'host') {
          hosts++;
          host = value;
        }
        break;
      case 6: {
        const lower = name.toLowerCase();
        if (lower === 'cookie') {
          cookie ??= [];
          cookie.push(value);
        } else if (lower === 'expect') return { fast: false, why: 'expect' };
        break;
      }
      case 7:
        if (name.toLowerCase() === 'upgrade') return { fast: false, why: 'upgrade' };
        break;
      case 10:
        if (name.toLowerCase() === 'connection') {
          for (const t of listTokens(value)) {
            if (t === 'upgrade') return { fast: false, why: 'connection upgrade' };
            if (t === 'close') close = true;
            // RFC 9110 §7.6.1: a framing header is never hop-by-hop.
            else if (t === 'content-length' || t === 'transfer-encoding')
              return { fast: false, why: 'connection names a framing header', refuse: true };
          }
        }
        break;
      case 14:
        if (name.toLowerCase() === 'content-length') {
          if (contentLength >= 0 || !DIGITS.test(value)) return { fast: false, why: 'content-length' };
          contentLength = Number(value);
        }
        break;
      case 17:
        if (name.toLowerCase() === 'transfer-encoding') return { fast: false, why: 'transfer-encoding' };
        break;
    }
  }
  if (hosts !== 1 || host === undefined) return { fast: false, why: 'host' };
  return {
    fast: true,
    head: {
      method: m[1]!,
      target: m[2]!,
      headers,
      contentLength: Math.max(contentLength, 0),
      host,
      cookie,
      close,
    },
  };
}

export interface ResponseHead {
  readonly status: number;
  readonly reason: string;
  /** Flat [name, value, …] as received. */
  readonly headers: string[];
  /** -1 when the response has no Content-Length. */
  readonly contentLength: number;
  readonly chunked: boolean;
  /** The backend keeps the connection open after this response (HTTP/1.1 without Connection: close). */
  readonly keepAlive: boolean;
}

/** Parses a backend response head; null when it is malformed or ambiguous (the node answers 502). */
export function parseResponseHead(head: string): ResponseHead | null {
  const lineEnd = head.indexOf('\r\n');
  const m = STATUS_LINE.exec(lineEnd < 0 ? head : head.slice(0, lineEnd));
  if (!m) return null;
  const headers: string[] = [];
  if (!scanFields(head, lineEnd, headers)) return null;
  let contentLength = -1;
  let te: string | undefined;
  let keepAlive = m[1] === '1';
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    const value = headers[i + 1]!;
    if (isName(name, 'content-length')) {
      if (!DIGITS.test(value)) return null;
      const n = Number(value);
      if (contentLength >= 0 && contentLength !== n) return null;
      contentLength = n;
    } else if (isName(name, 'transfer-encoding')) {
      te = te === undefined ? value : `${te}, ${value}`;
    } else if (isName(name, 'connection')) {
      if (hasToken(value, 'close')) keepAlive = false;
    }
  }
  let chunked = false;
  if (te !== undefined) {
    // Only plain chunked is passed through; a coding stacked under it, or TE next to Content-Length, is
    // the kind of ambiguity smuggling is made of.
    const codings = listTokens(te);
    if (codings.length !== 1 || codings[0] !== 'chunked' || contentLength >= 0) return null;
    chunked = true;
  }
  return { status: Number(m[2]), reason: m[3] ?? '', headers, contentLength, chunked, keepAlive };
}

// Chunked framing states (RFC 9112 §7.1).
const SIZE_START = 0;
const SIZE = 1;
const EXT = 2;
const SIZE_LF = 3;
const DATA = 4;
const DATA_CR = 5;
const DATA_LF = 6;
const TRAILER_START = 7;
const TRAILER = 8;
const TRAILER_LF = 9;
const END_LF = 10;
const DONE = 11;
const MAX_SIZE_DIGITS = 12;

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/**
 * Finds where a chunked body ends without decoding it: the bytes are forwarded unchanged, this only
 * tracks framing. Strict: CRLF only, hex sizes, no CTLs in extensions or trailers.
 */
export class ChunkedFramer {
  private state = SIZE_START;
  private remaining = 0;
  private digits = 0;

  get done(): boolean {
    return this.state === DONE;
  }

  /**
   * Feeds `buf[start..]`. Returns the offset just past the body's last byte when the body ends inside
   * this buffer, -1 when every byte was consumed and more are needed, -2 on a framing error.
   */
  feed(buf: Buffer, start = 0): number {
    let i = start;
    const n = buf.length;
    while (i < n) {
      const c = buf[i]!;
      switch (this.state) {
        case SIZE_START:
        case SIZE: {
          const h = hexValue(c);
          if (h >= 0) {
            if (++this.digits > MAX_SIZE_DIGITS) return -2;
            this.remaining = this.remaining * 16 + h;
            this.state = SIZE;
          } else if (this.state === SIZE_START) {
            return -2;
          } else if (c === 13) {
            this.state = SIZE_LF;
          } else if (c === 59 /* ; */ || c === 32 || c === 9) {
            this.state = EXT;
          } else {
            return -2;
          }
          i++;
          break;
        }
        case EXT:
          if (c === 13) this.state = SIZE_LF;
          else if ((c < 32 && c !== 9) || c === 127) return -2;
          i++;
          break;
        case SIZE_LF:
          if (c !== 10) return -2;
          this.digits = 0;
          this.state = this.remaining === 0 ? TRAILER_START : DATA;
          i++;
          break;
        case DATA: {
          const take = Math.min(this.remaining, n - i);
          this.remaining -= take;
          i += take;
          if (this.remaining === 0) this.state = DATA_CR;
          break;
        }
        case DATA_CR:
          if (c !== 13) return -2;
          this.state = DATA_LF;
          i++;
          break;
        case DATA_LF:
          if (c !== 10) return -2;
          this.state = SIZE_START;
          i++;
          break;
        case TRAILER_START:
          if (c === 13) this.state = END_LF;
          else if (c < 33 || c === 127) return -2;
          else this.state = TRAILER;
          i++;
          break;
        case TRAILER:
          if (c === 13) this.state = TRAILER_LF;
          else if ((c < 32 && c !== 9) || c === 127) return -2;
          i++;
          break;
        case TRAILER_LF:
          if (c !== 10) return -2;
          this.state = TRAILER_START;
          i++;
          break;
        case END_LF:
          if (c !== 10) return -2;
          this.state = DONE;
          return i + 1;
        default:
          return -2;
      }
    }
    return -1;
  }
}
