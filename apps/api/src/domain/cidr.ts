import { isIPv4, isIPv6 } from 'node:net';
import { CIDR_PATTERN } from '@slb/model';

const NODE_CIDR = new RegExp(CIDR_PATTERN);

function ipv4ToBigInt(address: string): bigint {
  return address.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function ipv6ToBigInt(address: string): bigint {
  let text = address;
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two hextets.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4?.[1]) {
    const n = ipv4ToBigInt(v4[1]);
    text = `${text.slice(0, -v4[1].length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const headParts = head ? head.split(':') : [];
  const tailParts = tail ? tail.split(':') : [];
  const missing = 8 - headParts.length - tailParts.length;
  const parts = [...headParts, ...Array(tail === undefined ? 0 : missing).fill('0'), ...tailParts];
  return parts.reduce((acc, part) => (acc << 16n) | BigInt(Number.parseInt(part, 16)), 0n);
}

/** null when `cidr` is a valid IPv4 or IPv6 prefix with no host bits set; else why not. */
export function cidrProblem(cidr: string): string | null {
  const match = /^([^/]+)\/(\d{1,3})$/.exec(cidr);
  if (!match) return 'must be ADDRESS/PREFIX, e.g. 10.0.0.0/8 or 2001:db8::/32';
  const [, address = '', prefixText = ''] = match;
  // What the nodes accept (no zone id: node:net takes fe80::1%eth0, a node's ACL does not).
  if (!NODE_CIDR.test(cidr)) return `${address} is not an IPv4 or IPv6 address (digits, hex, ':' and '.'; no zone id)`;
  const prefix = Number(prefixText);
  const bits = isIPv4(address) ? 32 : isIPv6(address) ? 128 : 0;
  if (bits === 0) return `${address} is not an IPv4 or IPv6 address`;
  if (prefix > bits) return `prefix length must be 0-${bits}`;
  const value = bits === 32 ? ipv4ToBigInt(address) : ipv6ToBigInt(address);
  const hostMask = (1n << BigInt(bits - prefix)) - 1n;
  if ((value & hostMask) !== 0n) return 'has host bits set beyond the prefix length';
  return null;
}
