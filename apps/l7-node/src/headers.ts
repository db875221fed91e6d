// Header rewriting between client and backend, pure. Hop-by-hop headers (RFC 9110 §7.6.1) and every
// header the client's Connection header names stay on their hop; the forwarding headers are the node's.
// A Connection option naming a framing header (Content-Length, Transfer-Encoding) is refused, never
// honoured: dropping Content-Length while the body is still sent would let the body be read by the backend
// as the next request on a pooled socket (request smuggling).

import { isName } from './tokens.js';

const HOP_BY_HOP_NAMES = [
  'connection',
  'proxy-connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
];
const HOP_BY_HOP = new Set(HOP_BY_HOP_NAMES);

/** Whether a header name (any case) is hop-by-hop, without a lower-cased copy of it. */
function isHopByHop(name: string): boolean {
  for (const h of HOP_BY_HOP_NAMES) if (isName(name, h)) return true;
  return false;
}

/** Whether the Connection options `named` (lower-cased) name the header `name` (any case). */
function namedBy(named: ReadonlySet<string> | null, name: string): boolean {
  if (named !== null) for (const t of named) if (isName(name, t)) return true;
  return false;
}

/**
 * Set by the node from the connection, or not at all: a client's own values are dropped, never trusted
 * (a backend or its logs could otherwise take a forged address or host for the node's word).
 */
const NODE_OWNED = new Set([
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-real-ip',
  'forwarded',
  'x-forwarded-host',
  'x-client-ip',
  'true-client-ip',
]);

/**
 * Which name lengths a rewrite has to look at by name. A header name is a token (ASCII), so lower-casing keeps
 * its length: a name of any other length matches none of the names and options checked, and is kept as it is
 * without the lower-cased copy, which on a backend's usual response head was most of the rewrite's cost.
 */
class NameLengths {
  private readonly fixed = new Uint8Array(32);

  constructor(names: Iterable<string>) {
    for (const n of names) this.fixed[n.length] = 1;
  }

  /** Whether a name of length `len` may be one of the names, or one of the Connection options in `named`. */
  checks(len: number, named: ReadonlySet<string> | null): boolean {
    if (len < 32 && this.fixed[len] === 1) return true;
    if (named !== null) for (const t of named) if (t.length === len) return true;
    return false;
  }
}

// Connection and Upgrade (kept for an upgrade) are hop-by-hop already.
const REQUEST_NAMES = new NameLengths([...HOP_BY_HOP, ...NODE_OWNED, 'expect', 'host', 'x-forwarded-for']);
const RESPONSE_NAMES = new NameLengths([...HOP_BY_HOP, 'content-length', 'set-cookie']);

/**
 * X-Forwarded-For toward the backend: `replace` sends only the client address the node saw (the default),
 * `append` adds it to the client's own list, `off` sends none (the client's is dropped either way).
 */
export type XffMode = 'replace' | 'append' | 'off';

export function xffModeOf(cfg: { xForwardedFor: boolean; xForwardedForMode?: 'replace' | 'append' }): XffMode {
  return cfg.xForwardedFor ? (cfg.xForwardedForMode ?? 'replace') : 'off';
}

export interface ForwardingInfo {
  readonly clientAddress: string;
  readonly proto: 'http' | 'https';
  readonly frontendPort: number;
  readonly xff: XffMode;
}

/** Lower-cased options of the Connection headers; null when there are none. */
function connectionTokens(rawHeaders: readonly string[]): Set<string> | null {
  let tokens: Set<string> | null = null;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length !== 10 || name.toLowerCase() !== 'connection') continue;
    for (const t of rawHeaders[i + 1]!.split(',')) {
      const token = t.trim().toLowerCase();
      if (!token) continue;
      tokens ??= new Set();
      tokens.add(token);
    }
  }
  return tokens;
}

/** Whether a set of Connection options names a header that frames the message (RFC 9110 §7.6.1). */
export function namesFraming(tokens: ReadonlySet<string> | null): boolean {
  return tokens !== null && (tokens.has('content-length') || tokens.has('transfer-encoding'));
}

/**
 * Request headers toward the backend, as a flat [name, value, …] list; null when the request must be
 * refused (400): a Connection option naming a framing header, or more than one Host. `keepUpgrade` keeps
 * Connection and Upgrade for a protocol upgrade (WebSocket), which is forwarded on a raw socket.
 */
export function requestHeadersToBackend(
  raw: readonly string[],
  fwd: ForwardingInfo,
  keepUpgrade = false,
): string[] | null {
  const named = connectionTokens(raw);
  if (namesFraming(named)) return null;
  const out: string[] = [];
  let xff: string | undefined;
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (!REQUEST_NAMES.checks(name.length, named)) {
      out.push(name, raw[i + 1]!);
      continue;
    }
    const lower = name.toLowerCase();
    if (keepUpgrade && (lower === 'connection' || lower === 'upgrade')) {
      out.push(name, raw[i + 1]!);
      continue;
    }
    if (HOP_BY_HOP.has(lower) || NODE_OWNED.has(lower) || lower === 'expect') continue;
    if (lower === 'host') {
      if (++hosts > 1) return null;
    } else if (named?.has(lower)) continue;
    if (lower === 'x-forwarded-for') {
      if (fwd.xff === 'append') xff = xff === undefined ? raw[i + 1]! : `${xff}, ${raw[i + 1]!}`;
      continue;
    }
    out.push(name, raw[i + 1]!);
  }
  pushForwardingHeaders(out, fwd, xff);
  return out;
}

/**
 * Appends the node's forwarding headers to a flat list. `clientXff`: the client's own X-Forwarded-For values,
 * joined with ", " (kept in front of the client's address in `append` mode, dropped otherwise).
 */
export function pushForwardingHeaders(out: string[], fwd: ForwardingInfo, clientXff: string | undefined): void {
  if (fwd.xff === 'append')
    out.push('x-forwarded-for', clientXff === undefined ? fwd.clientAddress : `${clientXff}, ${fwd.clientAddress}`);
  else if (fwd.xff === 'replace') out.push('x-forwarded-for', fwd.clientAddress);
  out.push(
    'x-forwarded-proto',
    fwd.proto,
    'x-forwarded-port',
    String(fwd.frontendPort),
    'x-real-ip',
    fwd.clientAddress,
  );
}

/** undici's raw header list as strings (latin1, so bytes 0x80-0xff survive). */
export function headerStrings(rawHeaders: readonly Buffer[]): string[] {
  const strings: string[] = new Array(rawHeaders.length);
  for (let i = 0; i < rawHeaders.length; i++) strings[i] = rawHeaders[i]!.toString('latin1');
  return strings;
}

/**
 * Response headers toward the client from a flat [name, value, …] list; also returns the Set-Cookie lines.
 * `dropContentLength` leaves Content-Length out for a caller that frames the body itself.
 */
export function responseHeadersToClient(
  raw: readonly string[],
  dropContentLength = false,
): { headers: string[]; setCookies: string[] } {
  const named = connectionTokens(raw);
  const headers: string[] = [];
  const setCookies: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (!RESPONSE_NAMES.checks(name.length, named)) {
      headers.push(name, raw[i + 1]!);
      continue;
    }
    // By char codes rather than a lower-cased copy: this runs for every response the fast path forwards.
    if (isHopByHop(name) || namedBy(named, name)) continue;
    if (dropContentLength && isName(name, 'content-length')) continue;
    if (isName(name, 'set-cookie')) setCookies.push(raw[i + 1]!);
    headers.push(name, raw[i + 1]!);
  }
  return { headers, setCookies };
}

/** An HTTP/1.1 message head: the start line, `name: value` lines from a flat list, the empty line. */
export function serializeHead(startLine: string, headers: readonly string[]): string {
  let text = `${startLine}\r\n`;
  for (let i = 0; i < headers.length; i += 2) text += `${headers[i]}: ${headers[i + 1]}\r\n`;
  return `${text}\r\n`;
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

export function isIdempotent(method: string): boolean {
  return IDEMPOTENT.has(method);
}

/** Whether a request carries a body (framed by Content-Length > 0 or Transfer-Encoding). */
export function hasBody(transferEncoding: string | undefined, contentLength: string | undefined): boolean {
  if (transferEncoding !== undefined) return true;
  return contentLength !== undefined && contentLength !== '0';
}
