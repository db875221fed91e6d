import {
  addressClassDenial,
  type BackendDenyReason,
  type DenyRule,
  denyRuleMatches,
  type IpValue,
  isSelfLoop,
  parseDenyRule,
  parseIp,
  type SnapshotBackendDeny,
} from '@slb/model';

// Defence in depth for the forwarding nodes: whatever a snapshot says, a backend in the deny set (the cloud's
// own endpoints, which the snapshot carries), in a special address class (unspecified, link-local, multicast …)
// or equal to one of the node's own listeners is never connected to. The API refuses such backends already;
// this catches servers written before the policy, a stale or hand-written snapshot, and a bug in the API.
// (The health worker applies the model's checkBackend to its probes the same way, without the self-loop part.)

export interface BackendGuardOptions {
  /** The snapshot's deny set. */
  deny?: readonly SnapshotBackendDeny[];
  /** Extra entries from the process's own configuration (`ADDRESS`, `CIDR`, `ADDRESS:PORT`, `[IPv6]:PORT`). */
  extraDeny?: readonly string[];
  /** The node's own addresses and listener ports: a backend equal to one would loop. */
  self?: { addresses: readonly string[]; ports: ReadonlySet<number> };
}

/**
 * Most addresses remembered: a snapshot re-resolves the same backends over and over. Per address, not per
 * address and port: a fleet's config has more distinct pairs than that, and the cache thrashed.
 */
const CACHE_LIMIT = 100_000;

export class BackendGuard {
  private readonly rules: DenyRule[] = [];
  /** Each address parsed, or why it is refused whatever the port. */
  private readonly addresses = new Map<string, IpValue | BackendDenyReason>();

  constructor(private readonly options: BackendGuardOptions = {}) {
    for (const entry of options.deny ?? []) {
      const rule = parseDenyRule(entry.port === undefined ? entry.cidr : `${bracket(entry.cidr)}:${entry.port}`);
      if (rule !== null) this.rules.push(rule);
    }
    for (const text of options.extraDeny ?? []) {
      const rule = parseDenyRule(text);
      if (rule !== null) this.rules.push(rule);
    }
  }

  /** Why this backend must not be connected to, or null when it may be. */
  check(address: string, port: number): BackendDenyReason | null {
    let known = this.addresses.get(address);
    if (known === undefined) {
      const parsed = parseIp(address);
      known = parsed === null ? 'invalid' : (addressClassDenial(parsed) ?? parsed);
      if (this.addresses.size >= CACHE_LIMIT) this.addresses.clear();
      this.addresses.set(address, known);
    }
    if (typeof known === 'string') return known;
    const parsed = known;
    if (this.rules.some((r) => denyRuleMatches(r, parsed, port))) return 'cloud_endpoint';
    if (this.options.self && isSelfLoop(address, port, this.options.self)) return 'self_loop';
    return null;
  }
}

/** An IPv6 network written with a port needs brackets to be read back. */
function bracket(cidr: string): string {
  return cidr.includes(':') ? `[${cidr}]` : cidr;
}
