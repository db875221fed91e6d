import { type Db, listeners, rules, serverHealth, servers } from '@slb/db';
import { coarseReason } from '@slb/health';
import type { ServerHealth } from '@slb/model';
import { asc, eq, inArray } from 'drizzle-orm';
import type { Scope } from './common.js';
import type { LoadBalancerService } from './load-balancers.js';

/**
 * Health of every (listener, server) pair of an LB, from what the health-check fleet reported.
 * `unavailable`: the listener is stopped, its health check is off, or the target was not checked yet.
 */
export class HealthService {
  constructor(
    private readonly db: Db,
    private readonly lbs: LoadBalancerService,
  ) {}

  forLoadBalancer(scope: Scope, lbId: string): ServerHealth[] {
    this.lbs.find(scope, lbId);
    const lbListeners = this.db
      .select()
      .from(listeners)
      .where(eq(listeners.loadBalancerId, lbId))
      .orderBy(asc(listeners.id))
      .all();
    if (lbListeners.length === 0) return [];
    const listenerIds = lbListeners.map((l) => l.id);
    const ruleGroups = this.db
      .select({ listenerId: rules.listenerId, serverGroupId: rules.serverGroupId })
      .from(rules)
      .where(inArray(rules.listenerId, listenerIds))
      .all();
    const groupsOf = new Map(lbListeners.map((l) => [l.id, new Set([l.serverGroupId])]));
    for (const r of ruleGroups) groupsOf.get(r.listenerId)?.add(r.serverGroupId);
    const groupIds = [...new Set([...groupsOf.values()].flatMap((s) => [...s]))];
    const members = this.db
      .select()
      .from(servers)
      .where(inArray(servers.serverGroupId, groupIds))
      .orderBy(asc(servers.id))
      .all();
    const reports = new Map(
      this.db
        .select()
        .from(serverHealth)
        .where(inArray(serverHealth.listenerId, listenerIds))
        .all()
        .map((h) => [`${h.listenerId}/${h.serverId}`, h]),
    );
    const items: ServerHealth[] = [];
    for (const listener of lbListeners) {
      const checked = listener.status === 'running' && listener.healthCheck.enabled;
      for (const groupId of groupsOf.get(listener.id) ?? []) {
        for (const server of members.filter((m) => m.serverGroupId === groupId)) {
          const report = checked ? reports.get(`${listener.id}/${server.id}`) : undefined;
          if (report) {
            items.push({
              listenerId: listener.id,
              serverGroupId: groupId,
              serverId: server.id,
              address: server.address,
              port: listener.backendPort ?? server.port,
              status: report.status,
              since: report.since,
              // Rows stored before reasons were coarsened may still hold a probe's detail.
              lastError: coarseReason(report.lastError),
            });
            continue;
          }
          items.push({
            listenerId: listener.id,
            serverGroupId: groupId,
            serverId: server.id,
            address: server.address,
            port: listener.backendPort ?? server.port,
            status: 'unavailable',
            // biome-ignore lint/complexity/useMathMinMax: RFC 3339 strings, compared as text
            since: server.createdAt > listener.createdAt ? server.createdAt : listener.createdAt,
            lastError: null,
          });
        }
      }
    }
    return items;
  }
}
