import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { SnapshotAcl } from '@slb/model';
import { unmapV4 } from './proxy-protocol.js';

// One ACL compiler for both nodes, so an entry means the same (and is refused the same) on L4 and L7.

/** Returns true when a source address may connect (IPv4-mapped IPv6 is judged as IPv4). */
export type AclCheck = (addr: string) => boolean;

export type AclResult = { ok: true; check: AclCheck | undefined } | { ok: false; reason: string };

/**
 * Compiles a listener's ACL into node's native BlockList once per config, so the per-accept check is one
 * native call. No ACL (or an empty deny list) compiles to `undefined`: nothing to check at all.
 */
export function compileAcl(acl: SnapshotAcl | undefined): AclResult {
  if (acl === undefined || (acl.mode === 'deny' && acl.cidrs.length === 0)) return { ok: true, check: undefined };
  const list = new BlockList();
  for (const cidr of acl.cidrs) {
    const [addr = '', bits] = cidr.split('/');
    const family = isIPv4(addr) ? 'ipv4' : isIPv6(addr) ? 'ipv6' : undefined;
    const max = family === 'ipv4' ? 32 : 128;
    const prefix = bits === undefined ? max : Number(bits);
    if (family === undefined || !Number.isInteger(prefix) || prefix < 0 || prefix > max) {
      return { ok: false, reason: `invalid ACL CIDR ${JSON.stringify(cidr)}` };
    }
    list.addSubnet(addr, prefix, family);
  }
  const listed = (raw: string): boolean => {
    const addr = unmapV4(raw);
    return list.check(addr, isIPv4(addr) ? 'ipv4' : 'ipv6');
  };
  return { ok: true, check: acl.mode === 'allow' ? listed : (addr) => !listed(addr) };
}
