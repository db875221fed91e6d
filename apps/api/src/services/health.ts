import type { Store } from '@slb/db';
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
    private readonly store: Store,
    private readonly lbs: LoadBalancerService,
  ) {}

  async forLoadBalancer(scope: Scope, lbId: string): Promise<ServerHealth[]> {
    await this.lbs.find(scope, lbId);
    const { t } = this.store;
    const lbListeners = await this.store.read((q) =>
      q.select().from(t.listeners).where(eq(t.listeners.loadBalancerId, lbId)).orderBy(asc(t.listeners.id)),
    );
    if (lbListeners.length === 0) return [];
    const listenerIds = lbListeners.map((l) => l.id);
    const ruleGroups = await this.store.read((q) =>
      q
        .select({ listenerId: t.rules.listenerId, serverGroupId: t.rules.serverGroupId })
        .from(t.rules)
        .where(inArray(t.rules.listenerId, listenerIds)),
    );
    const groupsOf = new Map(lbListeners.map((l) => [l.id, new Set([l.serverGroupId])]));
    for (const r of ruleGroups) groupsOf.get(r.listenerId)?.add(r.serverGroupId);
    const groupIds = [...new Set([...groupsOf.values()].flatMap((s) => [...s]))];
    const members = await this.store.read((q) =>
      q.select().from(t.servers).where(inArray(t.servers.serverGroupId, groupIds)).orderBy(asc(t.servers.id)),
    );
    const stored = await this.store.read((q) =>
      q.select().from(t.serverHealth).where(inArray(t.serverHealth.listenerId, listenerIds)),
    );
    const reports = new Map(stored.map((h) => [`${h.listenerId}/${h.serverId}`, h]));
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
