import type { L7NodeSnapshot, NodeSnapshot } from '@slb/model';
import { healthKey, type LbRows, type ListenerRow, type ServerRow } from './lb-rows.js';

/** Rows → the listeners as the nodes serve them. Pure: lb-rows.ts reads, this maps. */

export type L4ListenerConfig = Omit<NodeSnapshot['listeners'][number], 'bindAddresses'>;
export type L7ListenerConfig = Omit<L7NodeSnapshot['listeners'][number], 'bindAddress'>;

/** One LB as the nodes serve it; `json` is each listener serialised once, for cheap diffs per node. */
export interface CompiledLb {
  configVersion: number;
  /** The LB's VIP; null only for an LB that predates VIPs and got none (its pools were full). */
  address: string | null;
  l4: CompiledL4Listener[];
  l7: { config: L7ListenerConfig; json: string }[];
}

/**
 * An L4 listener serialised once: whole (`json`, the diff key), and in the parts a node that reads backend
 * sets is sent (its own fields, and its backends, one string for every listener with the same ones).
 */
export interface CompiledL4Listener {
  config: L4ListenerConfig;
  json: string;
  /** The listener's JSON without `backends`. */
  fieldsJson: string;
  /** Its backends' JSON: the same string object for the listeners of this LB with equal backends. */
  backendsJson: string;
}

/** The LBs in `rows`, their running listeners as an L4 node and an L7 node serve them. */
export function compileRows(
  rows: LbRows,
  openKey: (stored: string) => string = (stored) => stored,
): Map<string, CompiledLb> {
  const result = new Map<string, CompiledLb>();
  const serversByGroup = new Map<string, ServerRow[]>();
  for (const s of rows.servers) {
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
      healthy: !(l.healthCheck.enabled && rows.unhealthy.has(healthKey(l.id, s.id))),
    }));
  const aclOf = (l: ListenerRow) => {
    const acl = l.aclId ? rows.acls.get(l.aclId) : undefined;
    return acl && l.aclMode ? { acl: { mode: l.aclMode, cidrs: acl.entries.map((e) => e.cidr) } } : {};
  };

  // Equal backends' JSON as one string: the delivery keys backend sets by it, hashing each string once.
  const backendTexts = new Map<string, string>();
  const backendsText = (backends: unknown[]) => {
    const json = JSON.stringify(backends);
    const known = backendTexts.get(json);
    if (known !== undefined) return known;
    backendTexts.set(json, json);
    return json;
  };
  for (const lb of rows.lbs)
    result.set(lb.id, { configVersion: lb.configVersion, address: lb.address, l4: [], l7: [] });
  for (const l of rows.listeners) {
    const entry = result.get(l.loadBalancerId);
    if (!entry) continue;
    const http = l.protocol === 'http' || l.protocol === 'https';
    // Allocated with the listener; only a row not yet given one at the upgrade lacks it.
    if (http && l.l7Port === null) continue;
    const backends = http ? [] : backendsOf(l, l.serverGroupId);
    const fields: Omit<L4ListenerConfig, 'backends'> = {
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
    };
    const fieldsJson = JSON.stringify(fields);
    const backendsJson = backendsText(backends);
    // `backends` last, as the whole's JSON has it: the same text as JSON.stringify of the whole.
    const json = `${fieldsJson.slice(0, -1)},"backends":${backendsJson}}`;
    entry.l4.push({ config: { ...fields, backends }, json, fieldsJson, backendsJson });
    if (!http) continue;
    const listenerRules = rows.rules.filter((r) => r.listenerId === l.id);
    const groups = [...new Set([l.serverGroupId, ...listenerRules.map((r) => r.serverGroupId)])];
    const certs = (l.protocol === 'https' ? [l.certificateId, ...l.additionalCertificateIds] : [])
      .map((cid) => (cid ? rows.certificates.get(cid) : undefined))
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
