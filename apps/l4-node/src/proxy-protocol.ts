import { isIPv4 } from 'node:net';

// PROXY protocol headers toward backends (haproxy.org/download/2.9/doc/proxy-protocol.txt), so a backend
// behind this full-NAT proxy still learns the client's address.

/** The 12-byte v2 signature (spec §2.2). */
export const PROXY_V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);

export interface ProxyEndpoints {
  readonly srcAddr: string;
  readonly srcPort: number;
  readonly dstAddr: string;
  readonly dstPort: number;
}

/** A v4 address seen through a dual-stack socket (`::ffff:10.0.0.1`) is sent as the v4 address it is. */
export function unmapV4(addr: string): string {
  return addr.startsWith('::ffff:') && isIPv4(addr.slice(7)) ? addr.slice(7) : addr;
}

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

/**
 * v2 (binary), command PROXY. TCP4 = 0x11 with 12 address bytes, TCP6 = 0x21 with 36, UDP uses 0x12/0x22.
 * Mixed families are sent as IPv6 with the v4 side mapped (::ffff:a.b.c.d), which the spec allows.
 */
export function encodeProxyV2(e: ProxyEndpoints, transport: 'tcp' | 'udp' = 'tcp'): Buffer {
  let src = unmapV4(e.srcAddr);
  let dst = unmapV4(e.dstAddr);
  const v4 = isIPv4(src) && isIPv4(dst);
  if (!v4) {
    if (isIPv4(src)) src = `::ffff:${src}`;
    if (isIPv4(dst)) dst = `::ffff:${dst}`;
  }
  const addrLen = v4 ? 12 : 36;
  const buf = Buffer.alloc(16 + addrLen);
  PROXY_V2_SIGNATURE.copy(buf, 0);
  buf[12] = 0x21; // version 2, command PROXY
  buf[13] = (v4 ? 0x10 : 0x20) | (transport === 'tcp' ? 0x01 : 0x02);
  buf.writeUInt16BE(addrLen, 14);
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
  return buf;
}
