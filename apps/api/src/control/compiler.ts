import { acls, certificates, type Db, listeners, loadBalancers, rules, serverHealth, servers } from '@slb/db';
import type { L7NodeSnapshot, NodeSnapshot } from '@slb/model';
import { and, eq, inArray } from 'drizzle-orm';

type ListenerRow = typeof listeners.$inferSelect;
type ServerRow = typeof servers.$inferSelect;
export type L4ListenerConfig = Omit<NodeSnapshot['listeners'][number], 'bindAddresses'>;
export type L7ListenerConfig = Omit<L7NodeSnapshot['listeners'][number], 'bindAddress'>;

export interface LbSummary {
  id: string;
  configVersion: number;
  mode: 'all' | 'spread';
  nodeCount: number | null;
}

/** One LB as the nodes serve it; `json` is each listener serialised once, for cheap diffs per node. */
export interface CompiledLb {
  configVersion: number;
  /** The LB's VIP; null only for an LB that predates VIPs and got none (its pools were full). */
  address: string | null;
  l4: { config: L4ListenerConfig; json: string }[];
  l7: { config: L7ListenerConfig; json: string }[];
}

const healthKey = (listenerId: string, serverId: string) => `${listenerId}/${serverId}`;
const byId = <T extends { id: string }>(a: T, b: T) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const CHUNK = 500; // SQLite bound-variable limit

function chunked<T, R>(items: T[], read: (part: T[]) => R[]): R[] {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(...read(items.slice(i, i + CHUNK)));
  return out;
}

/** The columns of an LbSummary, read for the whole fleet or for the LBs a write names. */
const LB_SUMMARY = {
  id: loadBalancers.id,
  configVersion: loadBalancers.configVersion,
  mode: loadBalancers.placementMode,
  nodeCount: loadBalancers.placementNodeCount,
};

/** The fleet-wide read the hub makes on every change, prepared once per database. */
const prepared = new WeakMap<Db, { all(): LbSummary[] }>();

export function listLbs(db: Db): LbSummary[] {
  let q = prepared.get(db);
  if (q === undefined) {
    q = db.select(LB_SUMMARY).from(loadBalancers).prepare();
    prepared.set(db, q);
  }
  return q.all();
}

/** These LBs' rows (a write names the LB it changed; the hub then need not read the whole fleet). */
export function lbsByIds(db: Db, ids: string[]): Map<string, LbSummary> {
  const rows = chunked(ids, (part) =>
    db.select(LB_SUMMARY).from(loadBalancers).where(inArray(loadBalancers.id, part)).all(),
  );
  return new Map(rows.map((r) => [r.id, r]));
}

/**
 * Compiles the given LBs from the database: their running listeners as an L4 node and an L7 node serve
 * them. Only these LBs' rows are read, so a change costs in proportion to what changed, not to the fleet.
 */
export function compileLbs(
  db: Db,
  lbIds: string[],
  openKey: (stored: string) => string = (stored) => stored,
): Map<string, CompiledLb> {
  const result = new Map<string, CompiledLb>();
  if (lbIds.length === 0) return result;
  const versions = new Map(
    chunked(lbIds, (part) =>
      db
        .select({ id: loadBalancers.id, v: loadBalancers.configVersion, address: loadBalancers.address })
        .from(loadBalancers)
        .where(inArray(loadBalancers.id, part))
        .all(),
    ).map((r) => [r.id, r]),
  );
  const listenerRows = chunked(lbIds, (part) =>
    db
      .select()
      .from(listeners)
      .where(and(inArray(listeners.loadBalancerId, part), eq(listeners.status, 'running')))
      .all(),
  ).sort(byId);
  const listenerIds = listenerRows.map((l) => l.id);
  const ruleRows = chunked(listenerIds, (part) =>
    db.select().from(rules).where(inArray(rules.listenerId, part)).all(),
  ).sort(byId);
  const groupIds = [...new Set([...listenerRows.map((l) => l.serverGroupId), ...ruleRows.map((r) => r.serverGroupId)])];
  const serverRows = chunked(groupIds, (part) =>
    db.select().from(servers).where(inArray(servers.serverGroupId, part)).all(),
  ).sort(byId);
  const unhealthy = new Set(
    chunked(listenerIds, (part) =>
      db
        .select()
        .from(serverHealth)
        .where(and(inArray(serverHealth.listenerId, part), eq(serverHealth.status, 'abnormal')))
        .all(),
    ).map((h) => healthKey(h.listenerId, h.serverId)),
  );
  const aclIds = [...new Set(listenerRows.map((l) => l.aclId).filter((id): id is string => id !== null))];
  const aclRows = new Map(
    chunked(aclIds, (part) => db.select().from(acls).where(inArray(acls.id, part)).all()).map((a) => [a.id, a]),
  );
  const certIds = [
    ...new Set(
      listenerRows
        .filter((l) => l.protocol === 'https')
        .flatMap((l) => [l.certificateId, ...l.additionalCertificateIds]),
    ),
  ].filter((id): id is string => id !== null);
  const certRows = new Map(
    chunked(certIds, (part) => db.select().from(certificates).where(inArray(certificates.id, part)).all()).map((c) => [
      c.id,
      c,
    ]),
  );
  const serversByGroup = new Map<string, ServerRow[]>();
  for (const s of serverRows) {
    const list = serversByGroup.get(s.serverGroupId) ?? [];
    list.push(s);
    serversByGroup.set(s.serverGroupId, list);
  }

  const backendsOf = (l: ListenerRow, groupId: string) =>
    (serversByGroup.get(groupId) ?? []).map((s) => ({
      serverId: s.id,
      address: s.address,
      port: l.backendPort ?? s.port,
      weight: s.weight,
      // Not checked yet (no report) counts as healthy: the nodes' connect-retry covers a dead one.
      healthy: !(l.healthCheck.enabled && unhealthy.has(healthKey(l.id, s.id))),
    }));
  const aclOf = (l: ListenerRow) => {
    const acl = l.aclId ? aclRows.get(l.aclId) : undefined;
    return acl && l.aclMode ? { acl: { mode: l.aclMode, cidrs: acl.entries.map((e) => e.cidr) } } : {};
  };

  for (const id of lbIds) {
    const v = versions.get(id);
    if (v !== undefined) result.set(id, { configVersion: v.v, address: v.address, l4: [], l7: [] });
  }
  for (const l of listenerRows) {
    const entry = result.get(l.loadBalancerId);
    if (!entry) continue;
    const http = l.protocol === 'http' || l.protocol === 'https';
    // Allocated with the listener; only a row not yet given one at the upgrade lacks it.
    if (http && l.l7Port === null) continue;
    const l4: L4ListenerConfig = {
      id: l.id,
      loadBalancerId: l.loadBalancerId,
      tenantId: l.tenantId,
      protocol: l.protocol,
      port: l.port,
      scheduler: l.scheduler,
      persistenceTimeout: l.persistenceTimeout,
      proxyProtocol: http ? 'off' : l.proxyProtocol,
      connectionDrainTimeout: l.connectionDrainTimeout,
      idleTimeout: l.idleTimeout,
      maxConnections: l.maxConnections,
      ...aclOf(l),
      ...(http ? { l7Port: l.l7Port! } : {}),
      sessionSync: true,
      backends: http ? [] : backendsOf(l, l.serverGroupId),
    };
    entry.l4.push({ config: l4, json: JSON.stringify(l4) });
    if (!http) continue;
    const listenerRules = ruleRows.filter((r) => r.listenerId === l.id);
    const groups = [...new Set([l.serverGroupId, ...listenerRules.map((r) => r.serverGroupId)])];
    const certs = (l.protocol === 'https' ? [l.certificateId, ...l.additionalCertificateIds] : [])
      .map((cid) => (cid ? certRows.get(cid) : undefined))
      .filter((c) => c !== undefined);
    const l7: L7ListenerConfig = {
      id: l.id,
      loadBalancerId: l.loadBalancerId,
      tenantId: l.tenantId,
      protocol: l.protocol as 'http' | 'https',
      port: l.l7Port!,
      directPort: null,
      scheduler: l.scheduler === 'wlc' || l.scheduler === 'rr' ? l.scheduler : 'wrr',
      stickySession: l.stickySession,
      xForwardedFor: l.xForwardedFor,
      xForwardedForMode: l.xForwardedForMode,
      idleTimeout: l.idleTimeout,
      requestTimeout: l.requestTimeout ?? 60,
      certificates: listenerCertificates(certs, openKey),
      defaultServerGroupId: l.serverGroupId,
      rules: listenerRules.map((r) => ({
        id: r.id,
        domain: r.domain,
        path: r.path,
        serverGroupId: r.serverGroupId,
        priority: r.priority,
      })),
      serverGroups: groups.map((g) => ({ id: g, backends: backendsOf(l, g) })),
      ...aclOf(l),
    };
    entry.l7.push({ config: l7, json: JSON.stringify(l7) });
  }
  return result;
}

/**
 * The certificates an HTTPS listener's config carries, keys decrypted for the one audience that needs them:
 * the L7 nodes, over their authenticated channel. Only the listener's own certificates: a key uploaded but
 * not used by a running HTTPS listener is never sent. (Every L7 node serves every HTTP/HTTPS listener, since
 * the L4 nodes spread connections over all of them, so an L7 node gets the keys of the listeners it serves.)
 */
function listenerCertificates(
  certs: { id: string; certificatePem: string; privateKeyPem: string }[],
  openKey: (stored: string) => string,
) {
  return certs.map((c) => ({ id: c.id, certificatePem: c.certificatePem, privateKeyPem: openKey(c.privateKeyPem) }));
}
