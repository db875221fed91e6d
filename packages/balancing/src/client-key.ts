/**
 * The key a client address is counted under for per-client limits: an IPv4 address as it is, an IPv6
 * address by its /64 (one host is normally given a whole /64, so counting single addresses would let it
 * dodge a cap by rotating through them), an IPv4-mapped IPv6 address (a dual-stack listener's IPv4
 * client) as the IPv4 address. Pure and cheap for IPv4, the common case: no parsing without a colon.
 */
export function clientKey(address: string): string {
  if (!address.includes(':')) return address;
  const lower = address.toLowerCase();
  const zone = lower.indexOf('%');
  const addr = zone >= 0 ? lower.slice(0, zone) : lower;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(addr);
  if (mapped) return mapped[1]!;
  return `${prefix64(addr)}::/64`;
}

/** The first four 16-bit groups of an IPv6 literal, each without leading zeros, joined by colons. */
function prefix64(addr: string): string {
  const gap = addr.indexOf('::');
  let groups: string[];
  if (gap < 0) {
    groups = addr.split(':');
  } else {
    const head = gap === 0 ? [] : addr.slice(0, gap).split(':');
    const tail = gap + 2 >= addr.length ? [] : addr.slice(gap + 2).split(':');
    // An embedded IPv4 tail (::1.2.3.4) counts as two groups; only the first four groups matter here.
    const tailGroups = tail.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
    groups = [...head, ...Array<string>(Math.max(0, 8 - head.length - tailGroups)).fill('0'), ...tail];
  }
  const out: string[] = [];
  for (let i = 0; i < 4; i++) {
    const g = groups[i] ?? '0';
    out.push(g.includes('.') ? g : (Number.parseInt(g, 16) || 0).toString(16));
  }
  return out.join(':');
}
