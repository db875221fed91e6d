import { type IpNetwork, type IpValue, networkContains, parseIp, parseNetwork } from './ip-address.js';

// Which backend addresses a tenant may send traffic (and health checks) to. A backend is an address the
// cloud connects to on the tenant's behalf, from inside the cloud's own network: without a policy a tenant
// reaches the cloud's Redis, its API, the metadata service, other tenants' networks. The API decides with
// the tenant's allowed networks and the deny set; the nodes and health workers decide again with the deny
// set alone (defence in depth: a forged or stale snapshot still cannot point them at the cloud).
// The deny set always wins over the allowed networks.

/** Why a backend is refused; the API turns it into a message, the nodes into a metric label. */
export type BackendDenyReason =
  | 'invalid'
  | 'scoped'
  | 'unspecified'
  | 'link_local'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'translated'
  | 'cloud_endpoint'
  | 'self_loop'
  | 'outside_networks';

export type BackendVerdict = { allowed: true } | { allowed: false; reason: BackendDenyReason };

/** Coarse reasons a user may read: they say what class of address it is, never which cloud endpoint. */
export const BACKEND_DENY_MESSAGES: Record<BackendDenyReason, string> = {
  invalid: 'is not an IPv4 or IPv6 address',
  scoped: 'carries an IPv6 zone id; backends must be reachable without one',
  unspecified: 'is an unspecified address (0.0.0.0/8 or ::), which reaches the local host',
  link_local: 'is link-local (169.254.0.0/16, fe80::/10), where the metadata service lives',
  multicast: 'is a multicast address',
  broadcast: 'is the broadcast address',
  reserved: 'is in reserved address space (240.0.0.0/4)',
  translated: 'embeds an IPv4 address in a translation prefix; use the IPv4 address itself',
  cloud_endpoint: "is one of the load balancer service's own endpoints",
  self_loop: 'is a listener of the node itself',
  outside_networks: "is outside the tenant's allowed backend networks",
};

/** One deny entry: a network (a single host is a /32 or /128) and, when set, only that port on it. */
export interface DenyRule {
  network: IpNetwork;
  port: number | null;
}

function net(text: string): IpNetwork {
  const n = parseNetwork(text);
  if (n === null) throw new Error(`bad built-in network ${text}`);
  return n;
}

/** Address classes no backend may be in, whatever the tenant's networks and the operator's settings. */
const ALWAYS_DENIED: { network: IpNetwork; reason: BackendDenyReason }[] = [
  { network: net('255.255.255.255/32'), reason: 'broadcast' },
  { network: net('0.0.0.0/8'), reason: 'unspecified' },
  { network: net('::/128'), reason: 'unspecified' },
  { network: net('169.254.0.0/16'), reason: 'link_local' },
  { network: net('fe80::/10'), reason: 'link_local' },
  { network: net('224.0.0.0/4'), reason: 'multicast' },
  { network: net('ff00::/8'), reason: 'multicast' },
  { network: net('240.0.0.0/4'), reason: 'reserved' },
  // Prefixes that carry an IPv4 address inside IPv6: IPv4-compatible (deprecated), NAT64 (well-known and
  // local-use), SIIT-translated, 6to4 and Teredo. Through a translator they reach the embedded IPv4 host,
  // which the IPv4 rules could not see.
  { network: net('::/96'), reason: 'translated' },
  { network: net('::ffff:0:0:0/96'), reason: 'translated' },
  { network: net('64:ff9b::/96'), reason: 'translated' },
  { network: net('64:ff9b:1::/48'), reason: 'translated' },
  { network: net('2002::/16'), reason: 'translated' },
  { network: net('2001::/32'), reason: 'translated' },
];

const LOOPBACK_V4 = net('127.0.0.0/8');
const LOOPBACK_V6 = net('::1/128');

function isLoopback(address: { family: 4 | 6; value: bigint }): boolean {
  return networkContains(LOOPBACK_V4, address) || networkContains(LOOPBACK_V6, address);
}

/** The built-in class of an address (unspecified, link-local …), or null when it is an ordinary one. */
export function addressClassDenial(address: IpValue): BackendDenyReason | null {
  if (address.zone !== null) return 'scoped';
  // ::1 sits inside ::/96 but is loopback, not an IPv4-compatible address.
  if (address.family === 6 && address.value === 1n) return null;
  for (const entry of ALWAYS_DENIED) if (networkContains(entry.network, address)) return entry.reason;
  return null;
}

/**
 * Whether a deny rule covers this address and port. A rule for a port on a loopback address covers that
 * port on the whole loopback (127.0.0.0/8 and ::1): a service bound to the wildcard or to ::1 answers on
 * all of them, and `127.0.0.2:6379` must not reach the Redis the operator listed as `127.0.0.1:6379`.
 * A rule without a port (an address the endpoint owns, as a node's) means that address only.
 */
export function denyRuleMatches(rule: DenyRule, address: IpValue, port: number): boolean {
  if (rule.port !== null && rule.port !== port) return false;
  if (networkContains(rule.network, address)) return true;
  return rule.port !== null && isLoopback(address) && isLoopback(rule.network);
}

export interface BackendPolicy {
  /** The tenant's allowed networks; undefined: not checked here (the nodes know only the deny set). */
  allowedNetworks?: readonly IpNetwork[];
  /** The cloud's own endpoints and the operator's extra entries. */
  deny: readonly DenyRule[];
}

/** Decides one backend (address and the port the cloud would connect to). */
export function checkBackend(addressText: string, port: number, policy: BackendPolicy): BackendVerdict {
  const address = parseIp(addressText);
  if (address === null) return { allowed: false, reason: 'invalid' };
  const builtIn = addressClassDenial(address);
  if (builtIn !== null) return { allowed: false, reason: builtIn };
  if (policy.deny.some((rule) => denyRuleMatches(rule, address, port))) {
    return { allowed: false, reason: 'cloud_endpoint' };
  }
  if (policy.allowedNetworks && !policy.allowedNetworks.some((n) => networkContains(n, address))) {
    return { allowed: false, reason: 'outside_networks' };
  }
  return { allowed: true };
}

/**
 * Parses a deny entry as an operator writes it: `ADDRESS`, `CIDR`, `IPv4:PORT`, `CIDR4:PORT`,
 * `[IPv6]:PORT` or `[CIDR6]:PORT`. null when it is none of these.
 */
export function parseDenyRule(text: string): DenyRule | null {
  const trimmed = text.trim();
  let networkText = trimmed;
  let portText: string | null = null;
  const bracketed = /^\[([^\]]+)\]:([0-9]+)$/.exec(trimmed);
  if (bracketed) {
    networkText = bracketed[1] ?? '';
    portText = bracketed[2] ?? '';
  } else if (!trimmed.includes('::') && (trimmed.match(/:/g) ?? []).length === 1) {
    const colon = trimmed.indexOf(':');
    networkText = trimmed.slice(0, colon);
    portText = trimmed.slice(colon + 1);
  }
  const network = parseNetwork(networkText);
  if (network === null) return null;
  if (portText === null) return { network, port: null };
  if (!/^[1-9][0-9]{0,4}$/.test(portText) || Number(portText) > 65535) return null;
  return { network, port: Number(portText) };
}

/** A node's own listeners, as the node knows them: a backend equal to one of them is a loop. */
export interface SelfEndpoints {
  addresses: readonly string[];
  ports: ReadonlySet<number>;
}

/** True when address:port is one of the node's own listening endpoints (any spelling of the address). */
export function isSelfLoop(addressText: string, port: number, self: SelfEndpoints): boolean {
  if (!self.ports.has(port)) return false;
  const address = parseIp(addressText);
  if (address === null) return false;
  return self.addresses.some((own) => {
    const mine = parseIp(own);
    if (mine === null) return false;
    return mine.family === address.family && mine.value === address.value;
  });
}
