import {
  acls,
  certificates,
  type Db,
  listeners,
  loadBalancers,
  rules,
  serverGroups,
  serverHealth,
  servers,
} from '@slb/db';
import type { L7NodeSnapshot, NodeSnapshot } from '@slb/model';
import { eq } from 'drizzle-orm';
import { assignL7Ports } from './l7-port.js';

type ListenerRow = typeof listeners.$inferSelect;
type ServerRow = typeof servers.$inferSelect;
type L4Listener = NodeSnapshot['listeners'][number];
type L7Listener = L7NodeSnapshot['listeners'][number];

export interface CompiledLb {
  id: string;
  configVersion: number;
  mode: 'all' | 'spread';
  nodeCount: number | null;
}

/** Everything the nodes need, read from the database in one pass; snapshots are cut from it per node. */
export interface FleetConfig {
  lbs: CompiledLb[];
  /** Listeners of each LB as an L4 node serves them, without bind addresses (those are per node). */
  l4ListenersByLb: Map<string, Omit<L4Listener, 'bindAddresses'>[]>;
  /** Every running http/https listener, as each L7 node serves it. */
  l7Listeners: L7Listener[];
}

const healthKey = (listenerId: string, serverId: string) => `${listenerId}/${serverId}`;

/** Reads the database into the fleet's configuration. Listeners that are stopped are not served. */
export function compileFleet(db: Db): FleetConfig {
  const lbRows = db.select().from(loadBalancers).all();
  const listenerRows = db.select().from(listeners).where(eq(listeners.status, 'running')).all();
  const serverRows = db.select().from(servers).all();
  const ruleRows = db.select().from(rules).all();
  const aclRows = new Map(
    db
      .select()
      .from(acls)
      .all()
      .map((a) => [a.id, a]),
  );
  const certRows = new Map(
    db
      .select()
      .from(certificates)
      .all()
      .map((c) => [c.id, c]),
  );
  const groupIds = new Set(
    db
      .select({ id: serverGroups.id })
      .from(serverGroups)
      .all()
      .map((g) => g.id),
  );
  const unhealthy = new Set(
    db
      .select()
      .from(serverHealth)
      .all()
      .filter((h) => h.status === 'abnormal')
      .map((h) => healthKey(h.listenerId, h.serverId)),
  );
  const serversByGroup = new Map<string, ServerRow[]>();
  for (const s of serverRows) {
    const list = serversByGroup.get(s.serverGroupId) ?? [];
    list.push(s);
    serversByGroup.set(s.serverGroupId, list);
  }
  const httpListeners = listenerRows.filter((l) => l.protocol === 'http' || l.protocol === 'https');
  const l7Ports = assignL7Ports(httpListeners.map((l) => l.id));

  const backendsOf = (l: ListenerRow, groupId: string) =>
    (serversByGroup.get(groupId) ?? [])
      .map((s) => ({
        serverId: s.id,
        address: s.address,
        port: l.backendPort ?? s.port,
        weight: s.weight,
        // Not checked yet (no report) counts as healthy: the nodes' connect-retry covers a dead one.
        healthy: !(l.healthCheck.enabled && unhealthy.has(healthKey(l.id, s.id))),
      }))
      .sort((a, b) => (a.serverId < b.serverId ? -1 : 1));
  const aclOf = (l: ListenerRow) => {
    const acl = l.aclId ? aclRows.get(l.aclId) : undefined;
    return acl && l.aclMode ? { acl: { mode: l.aclMode, cidrs: acl.entries.map((e) => e.cidr) } } : {};
  };

  const l4ListenersByLb = new Map<string, Omit<L4Listener, 'bindAddresses'>[]>();
  for (const l of [...listenerRows].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    const http = l.protocol === 'http' || l.protocol === 'https';
    const list = l4ListenersByLb.get(l.loadBalancerId) ?? [];
    list.push({
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
      ...aclOf(l),
      ...(http ? { l7Port: l7Ports.get(l.id)! } : {}),
      sessionSync: true,
      backends: http ? [] : backendsOf(l, l.serverGroupId),
    });
    l4ListenersByLb.set(l.loadBalancerId, list);
  }

  const l7Listeners: L7Listener[] = httpListeners
    .sort((a, b) => (a.id < b.id ? -1 : 1))
    .map((l) => {
      const listenerRules = ruleRows.filter((r) => r.listenerId === l.id);
      const groups = [...new Set([l.serverGroupId, ...listenerRules.map((r) => r.serverGroupId)])].filter((g) =>
        groupIds.has(g),
      );
      const certIds = l.protocol === 'https' ? [l.certificateId, ...l.additionalCertificateIds] : [];
      return {
        id: l.id,
        loadBalancerId: l.loadBalancerId,
        tenantId: l.tenantId,
        protocol: l.protocol as 'http' | 'https',
        port: l7Ports.get(l.id)!,
        directPort: null,
        scheduler: l.scheduler === 'wlc' || l.scheduler === 'rr' ? l.scheduler : 'wrr',
        stickySession: l.stickySession,
        xForwardedFor: l.xForwardedFor,
        idleTimeout: l.idleTimeout,
        requestTimeout: l.requestTimeout ?? 60,
        certificates: certIds
          .map((id) => (id ? certRows.get(id) : undefined))
          .filter((c) => c !== undefined)
          .map((c) => ({ id: c.id, certificatePem: c.certificatePem, privateKeyPem: c.privateKeyPem })),
        defaultServerGroupId: l.serverGroupId,
        rules: listenerRules
          .map((r) => ({
            id: r.id,
            domain: r.domain,
            path: r.path,
            serverGroupId: r.serverGroupId,
            priority: r.priority,
          }))
          .sort((a, b) => (a.id < b.id ? -1 : 1)),
        serverGroups: groups.map((g) => ({ id: g, backends: backendsOf(l, g) })),
        ...aclOf(l),
      };
    });

  return {
    lbs: lbRows.map((lb) => ({
      id: lb.id,
      configVersion: lb.configVersion,
      mode: lb.placementMode,
      nodeCount: lb.placementNodeCount,
    })),
    l4ListenersByLb,
    l7Listeners,
  };
}
