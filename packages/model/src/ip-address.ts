// IP address parsing and normalisation for policy decisions, without I/O (no node:net): the API, the nodes
// and the health workers must agree on what an address *is*, however it is spelt. An IPv4-mapped IPv6
// address (`::ffff:127.0.0.1`, `::ffff:7f00:1`) is the IPv4 address: a dual-stack socket connecting to it
// reaches the IPv4 host, so a rule about 127.0.0.1 must catch it.

export type IpFamily = 4 | 6;

/** An address reduced to its family and value; `zone` is the IPv6 zone id (`fe80::1%eth0`), if any. */
export interface IpValue {
  family: IpFamily;
  value: bigint;
  zone: string | null;
}

/** A network: the address with host bits cleared and the prefix length. */
export interface IpNetwork {
  family: IpFamily;
  value: bigint;
  prefix: number;
}

const BITS: Record<IpFamily, number> = { 4: 32, 6: 128 };
const MAPPED_PREFIX = 0xffffn << 32n; // ::ffff:0:0/96

function parseIpv4(text: string): bigint | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  let value = 0n;
  for (const part of parts) {
    // Decimal only, no leading zeros: `0177.0.0.1` is octal to some resolvers and decimal to others.
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return null;
    const n = Number(part);
    if (n > 255) return null;
    value = (value << 8n) | BigInt(n);
  }
  return value;
}

function parseGroups(text: string): bigint[] | null {
  if (text === '') return [];
  const out: bigint[] = [];
  const parts = text.split(':');
  for (const [i, part] of parts.entries()) {
    if (i === parts.length - 1 && part.includes('.')) {
      const v4 = parseIpv4(part);
      if (v4 === null) return null;
      out.push(v4 >> 16n, v4 & 0xffffn);
    } else {
      if (!/^[0-9a-fA-F]{1,4}$/.test(part)) return null;
      out.push(BigInt(`0x${part}`));
    }
  }
  return out;
}

function parseIpv6(text: string): bigint | null {
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const head = parseGroups(halves[0] ?? '');
  const tail = halves.length === 2 ? parseGroups(halves[1] ?? '') : [];
  if (head === null || tail === null) return null;
  // A dotted tail is only valid as the last two groups.
  if (halves.length === 2 && (halves[0] ?? '').includes('.')) return null;
  const present = head.length + tail.length;
  if (halves.length === 1 ? present !== 8 : present > 7) return null;
  const groups = [...head, ...Array<bigint>(8 - present).fill(0n), ...tail];
  return groups.reduce((acc, g) => (acc << 16n) | g, 0n);
}

/**
 * Parses an IPv4 or IPv6 address in any valid spelling (compressed, upper case, dotted tail, zone id) and
 * normalises IPv4-mapped IPv6 addresses to IPv4. null when it is not an address.
 */
export function parseIp(text: string): IpValue | null {
  if (text.length === 0 || text.length > 100) return null;
  if (!text.includes(':')) {
    const v4 = parseIpv4(text);
    return v4 === null ? null : { family: 4, value: v4, zone: null };
  }
  const percent = text.indexOf('%');
  const zone = percent === -1 ? null : text.slice(percent + 1);
  if (zone !== null && !/^[0-9A-Za-z_.-]{1,64}$/.test(zone)) return null;
  const v6 = parseIpv6(percent === -1 ? text : text.slice(0, percent));
  if (v6 === null) return null;
  if (v6 >> 32n === MAPPED_PREFIX >> 32n) return { family: 4, value: v6 & 0xffffffffn, zone };
  return { family: 6, value: v6, zone };
}

/** Parses `ADDRESS/PREFIX` (or a bare address: a single host), normalised as parseIp; host bits are cleared. */
export function parseNetwork(text: string): IpNetwork | null {
  const slash = text.indexOf('/');
  const address = parseIp(slash === -1 ? text : text.slice(0, slash));
  if (address === null || address.zone !== null) return null;
  const rawBits = text.includes(':') ? 128 : 32;
  let prefix = rawBits;
  if (slash !== -1) {
    const prefixText = text.slice(slash + 1);
    if (!/^(0|[1-9][0-9]{0,2})$/.test(prefixText)) return null;
    prefix = Number(prefixText);
    if (prefix > rawBits) return null;
  }
  if (address.family === 4 && rawBits === 128) {
    // ::ffff:10.0.0.0/104 is 10.0.0.0/8; a mapped prefix shorter than /96 spans more than IPv4.
    if (prefix < 96) return null;
    prefix -= 96;
  }
  const bits = BITS[address.family];
  const hostMask = (1n << BigInt(bits - prefix)) - 1n;
  return { family: address.family, value: address.value & ~hostMask, prefix };
}

export function networkContains(network: IpNetwork, address: { family: IpFamily; value: bigint }): boolean {
  if (network.family !== address.family) return false;
  const shift = BigInt(BITS[network.family] - network.prefix);
  return address.value >> shift === network.value >> shift;
}

/** The canonical text of an address (IPv4 dotted, IPv6 RFC 5952 compressed lower case, no zone). */
export function formatIp(address: { family: IpFamily; value: bigint }): string {
  if (address.family === 4) {
    return [24n, 16n, 8n, 0n].map((s) => String((address.value >> s) & 0xffn)).join('.');
  }
  const groups = [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((s) => Number((address.value >> s) & 0xffffn));
  // The longest run of two or more zero groups becomes `::` (the first one on a tie).
  let best = { start: -1, length: 0 };
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.length && j - i >= 2) best = { start: i, length: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.start === -1) return hex.join(':');
  return `${hex.slice(0, best.start).join(':')}::${hex.slice(best.start + best.length).join(':')}`;
}

export function formatNetwork(network: IpNetwork): string {
  return `${formatIp(network)}/${network.prefix}`;
}

/** `address:port`, an IPv6 address in brackets so the port stays readable (`[2001:db8::1]:80`). */
export function hostPort(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}
