import { addressPools, type Db, listeners, nodes, rules, servers, tenantBackendNetworks, tenants } from '@slb/db';
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
  frontendPorts: () => Set<number>,
): boolean {
  if (shared.length === 0) return false;
  const target = parseIp(address);
  if (target === null || !shared.some((a) => a.family === target.family && a.value === target.value)) return false;
  return (port >= L7_PORT_BASE && port < L7_PORT_BASE + L7_PORT_RANGE) || frontendPorts().has(port);
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
    private readonly db: Db,
    options: BackendPolicyOptions,
  ) {
    this.defaults = parseAll(options.defaultNetworks, parseNetwork, 'default backend networks');
    this.staticDeny = parseAll(options.deny, parseDenyRule, 'backend deny');
  }

  get(tenantId: string): BackendNetworks {
    const tenant = this.db.select({ id: tenants.id }).from(tenants).where(eq(tenants.id, tenantId)).get();
    if (!tenant) throw notFound('tenant', tenantId);
    const row = this.db.select().from(tenantBackendNetworks).where(eq(tenantBackendNetworks.tenantId, tenantId)).get();
    const serversOutside = this.countRefused(tenantId);
    return row
      ? { tenantId, networks: row.networks, isDefault: false, updatedAt: row.updatedAt, serversOutside }
      : { tenantId, networks: this.defaults.map(formatNetwork), isDefault: true, updatedAt: null, serversOutside };
  }

  /** How many of the tenant's servers the policy would refuse today, on their own port. */
  private countRefused(tenantId: string): number {
    const policy: BackendPolicy = { allowedNetworks: this.networksOf(tenantId), deny: this.denyRules() };
    const rows = this.db
      .select({ address: servers.address, port: servers.port })
      .from(servers)
      .where(eq(servers.tenantId, tenantId))
      .all();
    return rows.filter((r) => !checkBackend(r.address, r.port, policy).allowed).length;
  }

  /** Sets (or with null clears) a tenant's own networks. Existing servers stay; see README "Security model". */
  put(tenantId: string, networks: string[] | null): BackendNetworks {
    return this.db.transaction(() => {
      this.get(tenantId);
      if (networks === null) {
        this.db.delete(tenantBackendNetworks).where(eq(tenantBackendNetworks.tenantId, tenantId)).run();
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
      this.db
        .insert(tenantBackendNetworks)
        .values(row)
        .onConflictDoUpdate({
          target: tenantBackendNetworks.tenantId,
          set: { networks: row.networks, updatedAt: now },
        })
        .run();
      return this.get(tenantId);
    });
  }

  /** Nodes on the host's shared loopback address (a development setup): see loopsThroughSharedNode. */
  private sharedNodeAddresses(): IpValue[] {
    return this.db
      .selectDistinct({ address: nodes.address })
      .from(nodes)
      .all()
      .map((n) => parseIp(n.address))
      .filter((a): a is IpValue => a !== null && SHARED_LOOPBACK.has(formatIp(a)));
  }

  /**
   * The deny set: static entries, every node address a node owns (not the host's shared loopback), and the
   * VIP pools: a server at a VIP would make the nodes connect, from their own addresses, to an LB they carry
   * (a loop through the data plane, with the node's address as the source another tenant's LB trusts).
   */
  denyRules(): DenyRule[] {
    const owned = this.db
      .selectDistinct({ address: nodes.address })
      .from(nodes)
      .all()
      .map((n) => n.address)
      .filter((a) => {
        const parsed = parseIp(a);
        return parsed !== null && !SHARED_LOOPBACK.has(formatIp(parsed));
      });
    const nodeRules: DenyRule[] = [];
    for (const address of owned) {
      const network = parseNetwork(address);
      if (network !== null) nodeRules.push({ network, port: null });
    }
    for (const pool of this.db.select({ cidr: addressPools.cidr }).from(addressPools).all()) {
      const network = parseNetwork(pool.cidr);
      if (network !== null) nodeRules.push({ network, port: null });
    }
    return [...this.staticDeny, ...nodeRules];
  }

  /** The deny set as the nodes receive it in their snapshot. */
  snapshotDeny(): SnapshotBackendDeny[] {
    return this.denyRules().map((r) => ({
      cidr: formatNetwork(r.network),
      ...(r.port === null ? {} : { port: r.port }),
    }));
  }

  private networksOf(tenantId: string): IpNetwork[] {
    const row = this.db.select().from(tenantBackendNetworks).where(eq(tenantBackendNetworks.tenantId, tenantId)).get();
    if (!row) return this.defaults;
    return row.networks.map((n) => parseNetwork(n)).filter((n): n is IpNetwork => n !== null);
  }

  /**
   * Ports the listeners using these groups make the cloud connect to besides the servers' own: a
   * listener's backendPort and its health check's port (directly, or through a forwarding rule).
   */
  listenerPorts(groupIds: readonly string[]): number[] {
    if (groupIds.length === 0) return [];
    const viaRules = this.db
      .select({ id: rules.listenerId })
      .from(rules)
      .where(inArray(rules.serverGroupId, [...groupIds]))
      .all()
      .map((r) => r.id);
    const rows = this.db
      .select({ backendPort: listeners.backendPort, healthCheck: listeners.healthCheck })
      .from(listeners)
      .where(
        viaRules.length > 0
          ? or(inArray(listeners.serverGroupId, [...groupIds]), inArray(listeners.id, viaRules))
          : inArray(listeners.serverGroupId, [...groupIds]),
      )
      .all();
    const ports = new Set<number>();
    for (const r of rows) {
      if (r.backendPort !== null) ports.add(r.backendPort);
      if (r.healthCheck.enabled && r.healthCheck.port !== null) ports.add(r.healthCheck.port);
    }
    return [...ports];
  }

  /** Throws 422 backend_address_denied naming every refused field (the first 20) and why. */
  check(tenantId: string, endpoints: readonly BackendEndpoint[]): void {
    if (endpoints.length === 0) return;
    const policy: BackendPolicy = { allowedNetworks: this.networksOf(tenantId), deny: this.denyRules() };
    const errors: FieldError[] = [];
    const shared = this.sharedNodeAddresses();
    let frontend: Set<number> | undefined;
    const frontendPorts = () => {
      frontend ??= new Set(
        this.db
          .selectDistinct({ port: listeners.port })
          .from(listeners)
          .all()
          .map((l) => l.port),
      );
      return frontend;
    };
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
