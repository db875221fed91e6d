import { isHttpProtocol } from '@slb/model';
import type { LiveListener, LiveState } from './diff.js';
import { type ListenerSpec, type LoadBalancerSpec, SPEC_API_VERSION } from './spec.js';

/**
 * The file for a live load balancer: every setting, by name, in a stable order (groups by name, servers by
 * address and port, listeners by port and protocol), so applying it back changes nothing and a diff of two
 * exports shows only what changed. Fields a protocol does not take are left out, as are null health-check
 * fields (the API fills them in).
 */
export function exportLoadBalancer(live: LiveState): LoadBalancerSpec {
  const lb = live.lb;
  if (!lb) throw new Error('nothing to export: no load balancer');
  const groupName = new Map(live.serverGroups.map((g) => [g.id, g.name]));
  const nameOf = (id: string) => groupName.get(id) ?? id;
  const certName = (id: string) => live.certificates.find((c) => c.id === id)?.name ?? id;
  const aclName = (id: string) => live.acls.find((a) => a.id === id)?.name ?? id;
  const spec: LoadBalancerSpec = {
    apiVersion: SPEC_API_VERSION,
    kind: 'LoadBalancer',
    name: lb.name,
    ...(lb.address ? { address: lb.address } : {}),
    addressType: lb.addressType,
    placement:
      lb.placement.nodeCount === null
        ? { mode: lb.placement.mode }
        : { mode: lb.placement.mode, nodeCount: lb.placement.nodeCount },
    deletionProtection: lb.deletionProtection,
    tags: { ...lb.tags },
    serverGroups: [...live.serverGroups]
      .sort((a, b) => compare(a.name, b.name))
      .map((g) => ({
        name: g.name,
        servers: [...g.servers]
          .sort((a, b) => compare(a.address, b.address) || a.port - b.port)
          .map((s) => ({
            address: s.address,
            port: s.port,
            weight: s.weight,
            ...(s.description ? { description: s.description } : {}),
          })),
      })),
    listeners: [...live.listeners]
      .sort((a, b) => a.port - b.port || compare(a.protocol, b.protocol))
      .map((l) => exportListener(l, live, nameOf, certName, aclName)),
  };
  return spec;
}

function exportListener(
  l: LiveListener,
  live: LiveState,
  groupName: (id: string) => string,
  certName: (id: string) => string,
  aclName: (id: string) => string,
): ListenerSpec {
  const http = isHttpProtocol(l.protocol);
  const healthCheck = Object.fromEntries(
    Object.entries(l.healthCheck).filter(([k, v]) => v !== null && fitsCheck(k, l.healthCheck.type)),
  ) as ListenerSpec['healthCheck'];
  const out: ListenerSpec = {
    protocol: l.protocol,
    port: l.port,
    serverGroup: groupName(l.serverGroupId),
    ...(l.backendPort !== null ? { backendPort: l.backendPort } : {}),
    scheduler: l.scheduler,
    ...(http ? {} : { persistenceTimeout: l.persistenceTimeout, proxyProtocol: l.proxyProtocol }),
    ...(http
      ? {
          stickySession: l.stickySession
            ? {
                mode: l.stickySession.mode,
                cookieName: l.stickySession.cookieName,
                ...(l.stickySession.cookieTimeout !== null ? { cookieTimeout: l.stickySession.cookieTimeout } : {}),
              }
            : null,
          xForwardedFor: l.xForwardedFor,
          xForwardedForMode: l.xForwardedForMode,
          ...(l.requestTimeout !== null ? { requestTimeout: l.requestTimeout } : {}),
        }
      : {}),
    healthCheck,
    idleTimeout: l.idleTimeout,
    connectionDrainTimeout: l.connectionDrainTimeout,
    maxConnections: l.maxConnections,
    ...(l.description ? { description: l.description } : {}),
    ...(l.protocol === 'https'
      ? {
          certificate: l.certificateId === null ? null : certName(l.certificateId),
          additionalCertificates: l.additionalCertificateIds.map(certName),
        }
      : {}),
    acl: l.acl === null ? null : { name: aclName(l.acl.aclId), mode: l.acl.mode },
    status: l.status,
  };
  if (http) {
    out.rules = [...(live.rules[l.id] ?? [])]
      .sort((a, b) => a.priority - b.priority || compare(a.id, b.id))
      .map((r) => ({
        ...(r.domain !== null ? { domain: r.domain } : {}),
        ...(r.path !== null ? { path: r.path } : {}),
        serverGroup: groupName(r.serverGroupId),
        priority: r.priority,
      }));
  }
  return out;
}

/** Health-check fields the API takes only for one check type. */
function fitsCheck(field: string, type: string): boolean {
  if (['method', 'path', 'domain', 'httpCodes'].includes(field)) return type === 'http';
  if (['udpRequest', 'udpExpect'].includes(field)) return type === 'udp';
  return true;
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
