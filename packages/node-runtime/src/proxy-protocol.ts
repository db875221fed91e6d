import { isIPv4, isIPv6, type Socket } from 'node:net';

// PROXY protocol (haproxy.org/download/2.9/doc/proxy-protocol.txt), both ends in one place: the L4 node
// encodes the header toward backends and L7 nodes, the L7 node decodes it, so one round-trip test holds
// the two to the same reading of the spec. Decoders return a reason instead of throwing.

/** The 12-byte v2 signature (spec §2.2). */
export const PROXY_V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);

/** Fixed part: signature, version/command, family/transport, 16-bit length. */
export const PROXY_V2_FIXED_LENGTH = 16;

/** Largest address+TLV block accepted. The spec allows 65535; real senders use well under 1 KiB. */
export const PROXY_V2_MAX_PAYLOAD = 2048;

/** Longest v1 line, CRLF included (spec §2.1). */
export const PROXY_V1_MAX_LENGTH = 107;

export interface ProxyEndpoints {
  readonly srcAddr: string;
  readonly srcPort: number;
  readonly dstAddr: string;
  readonly dstPort: number;
}

/** The name the receiving side has always used. */
export type ProxyAddresses = ProxyEndpoints;

export type ProxyTransport = 'tcp' | 'udp';

export type ProxyHeader =
  /** LOCAL command (health checks from the sender itself), UNSPEC or UNKNOWN: use the socket's addresses. */
  { readonly kind: 'local' } | ({ readonly kind: 'proxy' } & ProxyAddresses);

export type ParseResult = { ok: true; header: ProxyHeader } | { ok: false; reason: string };

/** A v4 address seen through a dual-stack socket (`::ffff:10.0.0.1`) is sent as the v4 address it is. */
export function unmapV4(addr: string): string {
  return addr.startsWith('::ffff:') && isIPv4(addr.slice(7)) ? addr.slice(7) : addr;
}

// ---------------------------------------------------------------------------------------------- encode

/** v1 (text): `PROXY TCP4 <src> <dst> <sport> <dport>\r\n`; mixed families cannot be expressed → UNKNOWN. */
export function encodeProxyV1(e: ProxyEndpoints): Buffer {
  const src = unmapV4(e.srcAddr);
  const dst = unmapV4(e.dstAddr);
  const v4 = isIPv4(src);
  if (v4 !== isIPv4(dst)) return Buffer.from('PROXY UNKNOWN\r\n', 'latin1');
  return Buffer.from(`PROXY ${v4 ? 'TCP4' : 'TCP6'} ${src} ${dst} ${e.srcPort} ${e.dstPort}\r\n`, 'latin1');
}

function writeV6(buf: Buffer, offset: number, addr: string): void {
  // Expand `::` then write eight 16-bit groups; an embedded v4 tail (::ffff:1.2.3.4) becomes two groups.
  let text = addr;
  const v4Tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4Tail) {
    const o = v4Tail[1]!.split('.').map(Number);
    text = `${text.slice(0, -v4Tail[1]!.length)}${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const groups =
    tail === undefined
      ? headGroups
      : [...headGroups, ...new Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  for (let i = 0; i < 8; i++) buf.writeUInt16BE(Number.parseInt(groups[i] ?? '0', 16), offset + i * 2);
}

function writeV4(buf: Buffer, offset: number, addr: string): void {
  const o = addr.split('.');
  for (let i = 0; i < 4; i++) buf[offset + i] = Number(o[i]);
}

const NO_TLVS = Buffer.alloc(0);

/**
 * v2 (binary), command PROXY. TCP4 = 0x11 with 12 address bytes, TCP6 = 0x21 with 36, UDP uses 0x12/0x22.
 * Mixed families are sent as IPv6 with the v4 side mapped (::ffff:a.b.c.d), which the spec allows.
 * `tlvs` (already encoded) follow the addresses; the nodes send none, tests and the bench do.
 */
export function encodeProxyV2(e: ProxyEndpoints, transport: ProxyTransport = 'tcp', tlvs: Buffer = NO_TLVS): Buffer {
  let src = unmapV4(e.srcAddr);
  let dst = unmapV4(e.dstAddr);
  const v4 = isIPv4(src) && isIPv4(dst);
  if (!v4) {
    if (isIPv4(src)) src = `::ffff:${src}`;
    if (isIPv4(dst)) dst = `::ffff:${dst}`;
  }
  const addrLen = v4 ? 12 : 36;
  const buf = Buffer.alloc(PROXY_V2_FIXED_LENGTH + addrLen + tlvs.length);
  PROXY_V2_SIGNATURE.copy(buf, 0);
  buf[12] = 0x21; // version 2, command PROXY
  buf[13] = (v4 ? 0x10 : 0x20) | (transport === 'tcp' ? 0x01 : 0x02);
  buf.writeUInt16BE(addrLen + tlvs.length, 14);
  if (v4) {
    writeV4(buf, 16, src);
    writeV4(buf, 20, dst);
    buf.writeUInt16BE(e.srcPort, 24);
    buf.writeUInt16BE(e.dstPort, 26);
  } else {
    writeV6(buf, 16, src);
    writeV6(buf, 32, dst);
    buf.writeUInt16BE(e.srcPort, 48);
    buf.writeUInt16BE(e.dstPort, 50);
  }
  tlvs.copy(buf, PROXY_V2_FIXED_LENGTH + addrLen);
  return buf;
}

// ---------------------------------------------------------------------------------------------- decode v2

/** Validates the 16 fixed bytes and returns the length of the block that follows. */
export function parseFixedPart(fixed: Buffer): { ok: true; payloadLength: number } | { ok: false; reason: string } {
  if (fixed.length < PROXY_V2_FIXED_LENGTH) return { ok: false, reason: 'short header' };
  if (!fixed.subarray(0, 12).equals(PROXY_V2_SIGNATURE)) return { ok: false, reason: 'bad signature' };
  const verCmd = fixed[12]!;
  if (verCmd >> 4 !== 2) return { ok: false, reason: 'bad version' };
  if ((verCmd & 0x0f) > 1) return { ok: false, reason: 'bad command' };
  const payloadLength = fixed.readUInt16BE(14);
  if (payloadLength > PROXY_V2_MAX_PAYLOAD) return { ok: false, reason: 'header too long' };
  return { ok: true, payloadLength };
}

function ipv6(buf: Buffer, offset: number): string {
  const groups: string[] = [];
  for (let i = 0; i < 8; i++) groups.push(buf.readUInt16BE(offset + i * 2).toString(16));
  // Compress the longest run of zero groups, as RFC 5952 writes addresses.
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen && j - i > 1) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (bestStart < 0) return groups.join(':');
  const head = groups.slice(0, bestStart).join(':');
  const tail = groups.slice(bestStart + bestLen).join(':');
  const text = `${head}::${tail}`;
  // An IPv4-mapped source (::ffff:a.b.c.d) is reported as the IPv4 client it is.
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(text);
  if (mapped) {
    const hi = Number.parseInt(mapped[1]!, 16);
    const lo = Number.parseInt(mapped[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return text;
}

/** Checks the TLV list is well formed (each entry fits), without interpreting it. */
function tlvsWellFormed(buf: Buffer, start: number, end: number): boolean {
  let i = start;
  while (i < end) {
    if (end - i < 3) return false;
    const len = buf.readUInt16BE(i + 1);
    i += 3 + len;
  }
  return i === end;
}

/**
 * Parses a complete v2 header (fixed part plus the declared block). `transport` is what the receiver
 * carries: a stream receiver refuses a datagram header and the other way round.
 */
export function parseProxyV2(header: Buffer, transport: ProxyTransport = 'tcp'): ParseResult {
  const fixed = parseFixedPart(header);
  if (!fixed.ok) return fixed;
  if (header.length !== PROXY_V2_FIXED_LENGTH + fixed.payloadLength) return { ok: false, reason: 'length mismatch' };
  const command = header[12]! & 0x0f;
  const family = header[13]! >> 4;
  const proto = header[13]! & 0x0f;
  const end = header.length;
  if (family > 3 || proto > 2) return { ok: false, reason: 'bad family/transport' };
  if (command === 0) return { ok: true, header: { kind: 'local' } };
  if (family === 0 || proto === 0) return { ok: true, header: { kind: 'local' } };
  if (proto !== (transport === 'tcp' ? 1 : 2)) {
    return { ok: false, reason: transport === 'tcp' ? 'datagram header on a stream' : 'stream header on a datagram' };
  }
  const p = PROXY_V2_FIXED_LENGTH;
  if (family === 1) {
    if (fixed.payloadLength < 12) return { ok: false, reason: 'short inet block' };
    if (!tlvsWellFormed(header, p + 12, end)) return { ok: false, reason: 'bad tlv' };
    return {
      ok: true,
      header: {
        kind: 'proxy',
        srcAddr: `${header[p]}.${header[p + 1]}.${header[p + 2]}.${header[p + 3]}`,
        dstAddr: `${header[p + 4]}.${header[p + 5]}.${header[p + 6]}.${header[p + 7]}`,
        srcPort: header.readUInt16BE(p + 8),
        dstPort: header.readUInt16BE(p + 10),
      },
    };
  }
  if (family === 2) {
    if (fixed.payloadLength < 36) return { ok: false, reason: 'short inet6 block' };
    if (!tlvsWellFormed(header, p + 36, end)) return { ok: false, reason: 'bad tlv' };
    return {
      ok: true,
      header: {
        kind: 'proxy',
        srcAddr: ipv6(header, p),
        dstAddr: ipv6(header, p + 16),
        srcPort: header.readUInt16BE(p + 32),
        dstPort: header.readUInt16BE(p + 34),
      },
    };
  }
  // AF_UNIX: no network address to report; the spec lets a receiver treat it as unknown.
  if (fixed.payloadLength < 216) return { ok: false, reason: 'short unix block' };
  return { ok: true, header: { kind: 'local' } };
}

// ---------------------------------------------------------------------------------------------- decode v1

const V1_PORT = /^(0|[1-9][0-9]{0,4})$/;

function v1Port(text: string): number {
  if (!V1_PORT.test(text)) return -1;
  const n = Number(text);
  return n <= 65535 ? n : -1;
}

/**
 * Parses one complete v1 line, `\r\n` included (spec §2.1): single spaces, addresses of the family named
 * (IPv6 without a zone), ports in decimal without leading zeros. Addresses are returned as written.
 */
export function parseProxyV1(line: Buffer): ParseResult {
  if (line.length > PROXY_V1_MAX_LENGTH) return { ok: false, reason: 'header too long' };
  if (line.length < 8) return { ok: false, reason: 'short header' };
  if (line.toString('latin1', 0, 6) !== 'PROXY ') return { ok: false, reason: 'bad signature' };
  if (line[line.length - 2] !== 0x0d || line[line.length - 1] !== 0x0a) return { ok: false, reason: 'no CRLF' };
  const text = line.toString('latin1', 6, line.length - 2);
  if (text.includes('\r') || text.includes('\n')) return { ok: false, reason: 'no CRLF' };
  // UNKNOWN may be followed by anything up to the CRLF, which the receiver ignores.
  if (text === 'UNKNOWN' || text.startsWith('UNKNOWN ')) return { ok: true, header: { kind: 'local' } };
  const parts = text.split(' ');
  if (parts.length !== 5) return { ok: false, reason: 'bad field count' };
  const [proto, srcAddr, dstAddr, sport, dport] = parts as [string, string, string, string, string];
  if (proto !== 'TCP4' && proto !== 'TCP6') return { ok: false, reason: 'bad protocol' };
  const valid = proto === 'TCP4' ? isIPv4 : (a: string) => isIPv6(a) && !a.includes('%');
  if (!valid(srcAddr) || !valid(dstAddr)) return { ok: false, reason: 'bad address' };
  const srcPort = v1Port(sport);
  const dstPort = v1Port(dport);
  if (srcPort < 0 || dstPort < 0) return { ok: false, reason: 'bad port' };
  return { ok: true, header: { kind: 'proxy', srcAddr, srcPort, dstAddr, dstPort } };
}

// ---------------------------------------------------------------------------------------------- stream

/**
 * Reads exactly one v2 header off a fresh socket, leaving every byte after it in the socket's buffer for
 * the HTTP/TLS layer. Resolves with a reason instead of throwing; the caller closes the socket on failure.
 * Bounded: it never waits for more than the header's own declared size, and a slow header times out.
 */
export function readProxyHeader(socket: Socket, timeoutMs: number): Promise<ParseResult> {
  return new Promise((resolve) => {
    let fixed: Buffer | null = null;
    let payloadLength = 0;
    let done = false;
    const finish = (r: ParseResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.removeListener('readable', onReadable);
      socket.removeListener('end', onEnd);
      socket.removeListener('close', onEnd);
      socket.removeListener('error', onEnd);
      resolve(r);
    };
    const onEnd = () => finish({ ok: false, reason: 'closed before header' });
    const onReadable = () => {
      if (!fixed) {
        const head = socket.read(PROXY_V2_FIXED_LENGTH) as Buffer | null;
        if (!head) return;
        const r = parseFixedPart(head);
        if (!r.ok) {
          finish(r);
          return;
        }
        fixed = head;
        payloadLength = r.payloadLength;
      }
      if (payloadLength === 0) {
        finish(parseProxyV2(fixed));
        return;
      }
      const rest = socket.read(payloadLength) as Buffer | null;
      if (!rest) return;
      finish(parseProxyV2(Buffer.concat([fixed, rest])));
    };
    const timer = setTimeout(() => finish({ ok: false, reason: 'header timeout' }), timeoutMs);
    socket.on('readable', onReadable);
    socket.once('end', onEnd);
    socket.once('close', onEnd);
    socket.once('error', onEnd);
  });
}
