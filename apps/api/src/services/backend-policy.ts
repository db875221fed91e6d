import type { Store } from '@slb/db';
import {
  BACKEND_DENY_MESSAGES,
  type BackendNetworks,
  type BackendPolicy,
  checkBackend,
  type DenyRule,
  type FieldError,
  formatIp,
  formatNetwork,
  type IpNetwork,
  type IpValue,
  L7_PORT_BASE,
  L7_PORT_RANGE,
  parseDenyRule,
  parseIp,
  parseNetwork,
  type SnapshotBackendDeny,
} from '@slb/model';
import { eq, inArray, or } from 'drizzle-orm';
import { cidrProblem } from '../domain/cidr.js';
import { ApiError, notFound, unprocessable } from '../errors.js';
import { nowIso } from './common.js';

/**
 * The deny set: static entries, every node address a node owns (not the host's shared loopback), and the
 * VIP pools: a server at a VIP would make the nodes connect, from their own addresses, to an LB they carry
 * (a loop through the data plane, with the node's address as the source another tenant's LB trusts).
 */
function denyRulesOf(staticDeny: DenyRule[], nodeAddresses: string[], poolCidrs: string[]): DenyRule[] {
  const rules: DenyRule[] = [];
  for (const address of nodeAddresses) {
    const parsed = parseIp(address);
    if (parsed === null || SHARED_LOOPBACK.has(formatIp(parsed))) continue;
    const network = parseNetwork(address);
    if (network !== null) rules.push({ network, port: null });
  }
  for (const cidr of poolCidrs) {
    const network = parseNetwork(cidr);
    if (network !== null) rules.push({ network, port: null });
  }
  return [...staticDeny, ...rules];
}

/** What the operator configured: the default networks of tenants without their own, and extra deny entries. */
export interface BackendPolicyOptions {
  /** CIDRs; default DEFAULT_BACKEND_NETWORKS (private ranges; no loopback). */
  defaultNetworks: readonly string[];
  /** The cloud's own endpoints and the operator's extras (`ADDRESS`, `CIDR`, `ADDRESS:PORT`, `[IPv6]:PORT`). */
  deny: readonly string[];
}

/** A server as a write would leave it: its address, the ports the cloud would connect to, its field path. */
export interface BackendEndpoint {
  address: string;
  ports: readonly number[];
  /** JSON pointer into the request, e.g. /body/servers/0/address. */
  path: string;
}

/** The ports a listener's settings make the cloud connect to, besides the servers' own. */
export function backendPortsOf(settings: {
  backendPort: number | null;
  healthCheck: { enabled: boolean; port: number | null };
}): { backendPort: number | null; healthCheckPort: number | null } {
  return {
    backendPort: settings.backendPort,
    healthCheckPort: settings.healthCheck.enabled ? settings.healthCheck.port : null,
  };
}

/**
 * A node on the host's shared loopback address does not own it, so only its listening ports are denied
 * there: every frontend port of the fleet (any LB may be placed on it) and the L7 port range. Such a
 * backend would loop through the node itself.
 */
function loopsThroughSharedNode(
  shared: readonly IpValue[],
  address: string,
  port: number,
  frontendPorts: ReadonlySet<number>,
): boolean {
  if (!onSharedNode(shared, address)) return false;
  return (port >= L7_PORT_BASE && port < L7_PORT_BASE + L7_PORT_RANGE) || frontendPorts.has(port);
}

function onSharedNode(shared: readonly IpValue[], address: string): boolean {
  if (shared.length === 0) return false;
  const target = parseIp(address);
  return target !== null && shared.some((a) => a.family === target.family && a.value === target.value);
}

/** Addresses every process on a host shares: a node there does not own them, so they are not denied whole. */
const SHARED_LOOPBACK = new Set(['127.0.0.1', '::1']);

function parseAll<T>(entries: readonly string[], parse: (s: string) => T | null, what: string): T[] {
  return entries.map((entry, i) => {
    const parsed = parse(entry);
    if (parsed === null) throw new Error(`${what} entry ${i + 1} is not a valid address, network or address:port`);
    return parsed;
  });
}

/**
 * The backend address policy of the API: a tenant's allowed networks and the deny set (the cloud's own
 * endpoints, the node addresses and the operator's extras), which always wins.
 */
export class BackendPolicyService {
  private readonly defaults: IpNetwork[];
  private readonly staticDeny: DenyRule[];

  constructor(
    private readonly store: Store,
    options: BackendPolicyOptions,
  ) {
    this.defaults = parseAll(options.defaultNetworks, parseNetwork, 'default backend networks');
    this.staticDeny = parseAll(options.deny, parseDenyRule, 'backend deny');
  }

  async get(tenantId: string): Promise<BackendNetworks> {
    const { t } = this.store;
    const [tenant] = await this.store.read((q) =>
      q.select({ id: t.tenants.id }).from(t.tenants).where(eq(t.tenants.id, tenantId)),
    );
    if (!tenant) throw notFound('tenant', tenantId);
    const row = await this.ownNetworks(tenantId);
    const serversOutside = await this.countRefused(tenantId);
    return row
      ? { tenantId, networks: row.networks, isDefault: false, updatedAt: row.updatedAt, serversOutside }
      : { tenantId, networks: this.defaults.map(formatNetwork), isDefault: true, updatedAt: null, serversOutside };
  }

  /** How many of the tenant's servers the policy would refuse today, on their own port. */
  private async countRefused(tenantId: string): Promise<number> {
    const { t } = this.store;
    const deny = await this.denyRules(await this.nodeAddresses());
    const policy: BackendPolicy = { allowedNetworks: await this.networksOf(tenantId), deny };
    const rows = await this.store.read((q) =>
      q
        .select({ address: t.servers.address, port: t.servers.port })
        .from(t.servers)
        .where(eq(t.servers.tenantId, tenantId)),
    );
    return rows.filter((r) => !checkBackend(r.address, r.port, policy).allowed).length;
  }

  private async ownNetworks(tenantId: string) {
    const { t } = this.store;
    const [row] = await this.store.read((q) =>
      q.select().from(t.tenantBackendNetworks).where(eq(t.tenantBackendNetworks.tenantId, tenantId)),
    );
    return row;
  }

  /** Sets (or with null clears) a tenant's own networks. Existing servers stay; see README "Security model". */
  put(tenantId: string, networks: string[] | null): Promise<BackendNetworks> {
    const { t } = this.store;
    return this.store.write(async (q) => {
      await this.get(tenantId);
      if (networks === null) {
        await q.delete(t.tenantBackendNetworks).where(eq(t.tenantBackendNetworks.tenantId, tenantId));
        return this.get(tenantId);
      }
      const canonical = networks.map((cidr, i) => {
        const problem = cidrProblem(cidr);
        const parsed = problem === null ? parseNetwork(cidr) : null;
        if (parsed === null) throw unprocessable(`/networks/${i}`, problem ?? 'is not a network');
        return formatNetwork(parsed);
      });
      const now = nowIso();
      const row = { tenantId, networks: [...new Set(canonical)], createdAt: now, updatedAt: now };
      await q
        .insert(t.tenantBackendNetworks)
        .values(row)
        .onConflictDoUpdate({
          target: t.tenantBackendNetworks.tenantId,
          set: { networks: row.networks, updatedAt: now },
        });
      return this.get(tenantId);
    });
  }

  private async nodeAddresses(): Promise<string[]> {
    const { t } = this.store;
    const rows = await this.store.read((q) => q.selectDistinct({ address: t.nodes.address }).from(t.nodes));
    return rows.map((n) => n.address);
  }

  /** The deny set now (denyRulesOf), from the node addresses given. */
  private async denyRules(nodeAddresses: string[]): Promise<DenyRule[]> {
    const { t } = this.store;
    const pools = await this.store.read((q) => q.select({ cidr: t.addressPools.cidr }).from(t.addressPools));
    return denyRulesOf(
      this.staticDeny,
      nodeAddresses,
      pools.map((p) => p.cidr),
    );
  }

  /** The deny set as the nodes receive it in their snapshot. */
  async snapshotDeny(): Promise<SnapshotBackendDeny[]> {
    const { t } = this.store;
    const [nodeRows, pools] = await this.store.read(async (q) => [
      await q.selectDistinct({ address: t.nodes.address }).from(t.nodes),
      await q.select({ cidr: t.addressPools.cidr }).from(t.addressPools),
    ]);
    return denyRulesOf(
      this.staticDeny,
      nodeRows.map((n) => n.address),
      pools.map((p) => p.cidr),
    ).map((r) => ({
      cidr: formatNetwork(r.network),
      ...(r.port === null ? {} : { port: r.port }),
    }));
  }

  private async networksOf(tenantId: string): Promise<IpNetwork[]> {
    const row = await this.ownNetworks(tenantId);
    if (!row) return this.defaults;
    return row.networks.map((n) => parseNetwork(n)).filter((n): n is IpNetwork => n !== null);
  }

  /**
   * Ports the listeners using these groups make the cloud connect to besides the servers' own: a
   * listener's backendPort and its health check's port (directly, or through a forwarding rule).
   */
  async listenerPorts(groupIds: readonly string[]): Promise<number[]> {
    if (groupIds.length === 0) return [];
    const { t } = this.store;
    const viaRules = (
      await this.store.read((q) =>
        q
          .select({ id: t.rules.listenerId })
          .from(t.rules)
          .where(inArray(t.rules.serverGroupId, [...groupIds])),
      )
    ).map((r) => r.id);
    const rows = await this.store.read((q) =>
      q
        .select({ backendPort: t.listeners.backendPort, healthCheck: t.listeners.healthCheck })
        .from(t.listeners)
        .where(
          viaRules.length > 0
            ? or(inArray(t.listeners.serverGroupId, [...groupIds]), inArray(t.listeners.id, viaRules))
            : inArray(t.listeners.serverGroupId, [...groupIds]),
        ),
    );
    const ports = new Set<number>();
    for (const r of rows) {
      if (r.backendPort !== null) ports.add(r.backendPort);
      if (r.healthCheck.enabled && r.healthCheck.port !== null) ports.add(r.healthCheck.port);
    }
    return [...ports];
  }

  /** Throws 422 backend_address_denied naming every refused field (the first 20) and why. */
  async check(tenantId: string, endpoints: readonly BackendEndpoint[]): Promise<void> {
    if (endpoints.length === 0) return;
    const { t } = this.store;
    const nodeAddresses = await this.nodeAddresses();
    const policy: BackendPolicy = {
      allowedNetworks: await this.networksOf(tenantId),
      deny: await this.denyRules(nodeAddresses),
    };
    const errors: FieldError[] = [];
    // Nodes on the host's shared loopback address (a development setup): see loopsThroughSharedNode.
    const shared = nodeAddresses
      .map((address) => parseIp(address))
      .filter((a): a is IpValue => a !== null && SHARED_LOOPBACK.has(formatIp(a)));
    // Every listener's port, read only when an endpoint is on such an address.
    const frontendPorts = endpoints.some((e) => onSharedNode(shared, e.address))
      ? new Set(
          (await this.store.read((q) => q.selectDistinct({ port: t.listeners.port }).from(t.listeners))).map(
            (l) => l.port,
          ),
        )
      : new Set<number>();
    for (const e of endpoints) {
      for (const port of new Set(e.ports)) {
        let verdict = checkBackend(e.address, port, policy);
        if (verdict.allowed && loopsThroughSharedNode(shared, e.address, port, frontendPorts)) {
          verdict = { allowed: false, reason: 'cloud_endpoint' };
        }
        if (verdict.allowed) continue;
        const where = verdict.reason === 'cloud_endpoint' ? ` (port ${port})` : '';
        errors.push({
          path: e.path,
          message: `${e.address}${where} ${BACKEND_DENY_MESSAGES[verdict.reason]}`,
        });
        break;
      }
      if (errors.length >= 20) break;
    }
    if (errors.length === 0) return;
    const [first] = errors;
    const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
    throw new ApiError('backend_address_denied', `${first!.path}: ${first!.message}${more}`, errors);
  }
}
