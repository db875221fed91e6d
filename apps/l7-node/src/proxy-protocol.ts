import type { Socket } from 'node:net';

// PROXY protocol v2 receiver (haproxy.org/download/2.9/doc/proxy-protocol.txt §2.2): the L4 nodes open
// each connection with this binary header carrying the real client address. Parsed strictly and bounded:
// a reader never waits for more than the header's own declared size, and a slow header times out.

/** The 12-byte v2 signature. */
export const PROXY_V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);

/** Fixed part: signature, version/command, family/transport, 16-bit length. */
export const PROXY_V2_FIXED_LENGTH = 16;

/** Largest address+TLV block accepted. The spec allows 65535; real senders use well under 1 KiB. */
export const PROXY_V2_MAX_PAYLOAD = 2048;

export interface ProxyAddresses {
  readonly srcAddr: string;
  readonly srcPort: number;
  readonly dstAddr: string;
  readonly dstPort: number;
}

export type ProxyHeader =
  /** LOCAL command (health checks from the sender itself) or UNSPEC family: use the socket's addresses. */
  { readonly kind: 'local' } | ({ readonly kind: 'proxy' } & ProxyAddresses);

export type ParseResult = { ok: true; header: ProxyHeader } | { ok: false; reason: string };

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

/** Parses a complete header (fixed part plus the declared block). */
export function parseProxyV2(header: Buffer): ParseResult {
  const fixed = parseFixedPart(header);
  if (!fixed.ok) return fixed;
  if (header.length !== PROXY_V2_FIXED_LENGTH + fixed.payloadLength) return { ok: false, reason: 'length mismatch' };
  const command = header[12]! & 0x0f;
  const family = header[13]! >> 4;
  const transport = header[13]! & 0x0f;
  const end = header.length;
  if (family > 3 || transport > 2) return { ok: false, reason: 'bad family/transport' };
  if (command === 0) return { ok: true, header: { kind: 'local' } };
  if (family === 0 || transport === 0) return { ok: true, header: { kind: 'local' } };
  if (transport !== 1) return { ok: false, reason: 'datagram header on a stream' };
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

/**
 * Reads exactly one header off a fresh socket, leaving every byte after it in the socket's buffer for
 * the HTTP/TLS layer. Resolves with a reason instead of throwing; the caller closes the socket on failure.
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

/** Encodes a v2 PROXY header for TCP; used by tests and the bench as the L4 node would send it. */
export function encodeProxyV2(a: ProxyAddresses, tlvs: Buffer = Buffer.alloc(0)): Buffer {
  const v6 = a.srcAddr.includes(':');
  const block = Buffer.alloc((v6 ? 36 : 12) + tlvs.length);
  if (v6) {
    writeV6(block, 0, a.srcAddr);
    writeV6(block, 16, a.dstAddr);
    block.writeUInt16BE(a.srcPort, 32);
    block.writeUInt16BE(a.dstPort, 34);
    tlvs.copy(block, 36);
  } else {
    a.srcAddr.split('.').forEach((o, i) => {
      block[i] = Number(o);
    });
    a.dstAddr.split('.').forEach((o, i) => {
      block[4 + i] = Number(o);
    });
    block.writeUInt16BE(a.srcPort, 8);
    block.writeUInt16BE(a.dstPort, 10);
    tlvs.copy(block, 12);
  }
  const fixed = Buffer.alloc(PROXY_V2_FIXED_LENGTH);
  PROXY_V2_SIGNATURE.copy(fixed);
  fixed[12] = 0x21;
  fixed[13] = v6 ? 0x21 : 0x11;
  fixed.writeUInt16BE(block.length, 14);
  return Buffer.concat([fixed, block]);
}

function writeV6(buf: Buffer, offset: number, addr: string): void {
  const [head, tail] = addr.includes('::') ? addr.split('::') : [addr, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...new Array<string>(8 - h.length - t.length).fill('0'), ...t];
  for (let i = 0; i < 8; i++) buf.writeUInt16BE(Number.parseInt(groups[i] ?? '0', 16), offset + i * 2);
}
