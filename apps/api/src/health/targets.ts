import type { Dialect, Store } from '@slb/db';
import { type HealthCheckConfig, probeKey, resolveHealthCheck } from '@slb/health';
import type { HealthCheck, HealthCheckTarget, HealthProbe } from '@slb/model';
import { and, type Column, eq, inArray, type SQL, sql } from 'drizzle-orm';

/** A target the settings could not be resolved for (bad stored data); it is left out, not guessed. */
export interface SkippedTarget {
  listenerId: string;
  serverId: string;
  reason: string;
}

export interface HealthPlan {
  /** Probe key → probe; the scheduler groups them into shards (shards.ts). */
  probes: Map<string, HealthProbe>;
  skipped: SkippedTarget[];
}

/**
 * Every (listener, server) target that must be checked, grouped by probe: running listeners whose check is
 * enabled × the servers of their default group and their rules' groups. Targets whose probes would be
 * identical (same address, port and settings) share one probe, so a server behind several listeners is
 * probed once per interval.
 */
/** Whether a JSON column's boolean field is true, in each engine's JSON functions. */
function jsonFieldTrue(dialect: Dialect, column: Column, field: string): SQL {
  return dialect === 'postgres' ? sql`(${column}->>${field})::boolean` : sql`json_extract(${column}, ${`$.${field}`})`;
}

export async function planHealthChecks(store: Store): Promise<HealthPlan> {
  const { t } = store;
  // Filtered in SQL too: a listener with its check off is not read and mapped at all. A sync follows the
  // writes (at least once a second under a stream of them), and read every listener of the fleet.
  const running = await store.read((q) =>
    q
      .select()
      .from(t.listeners)
      .where(and(eq(t.listeners.status, 'running'), jsonFieldTrue(store.dialect, t.listeners.healthCheck, 'enabled'))),
  );
  const checked = running.filter((l) => l.healthCheck.enabled);
  const groupsOf = new Map(checked.map((l) => [l.id, new Set([l.serverGroupId])]));
  if (checked.length > 0) {
    const ruleGroups = await store.read((q) =>
      q
        .select({ listenerId: t.rules.listenerId, serverGroupId: t.rules.serverGroupId })
        .from(t.rules)
        .where(
          inArray(
            t.rules.listenerId,
            checked.map((l) => l.id),
          ),
        ),
    );
    for (const r of ruleGroups) groupsOf.get(r.listenerId)?.add(r.serverGroupId);
  }
  const groupIds = [...new Set([...groupsOf.values()].flatMap((s) => [...s]))];
  const members =
    groupIds.length === 0
      ? []
      : await store.read((q) => q.select().from(t.servers).where(inArray(t.servers.serverGroupId, groupIds)));
  const byGroup = new Map<string, typeof members>();
  for (const m of members) byGroup.set(m.serverGroupId, [...(byGroup.get(m.serverGroupId) ?? []), m]);

  const entries: Array<{
    key: string;
    address: string;
    settings: HealthProbe['settings'];
    target: HealthCheckTarget;
  }> = [];
  const skipped: SkippedTarget[] = [];
  for (const listener of checked) {
    const seen = new Set<string>();
    for (const groupId of groupsOf.get(listener.id) ?? []) {
      for (const server of byGroup.get(groupId) ?? []) {
        if (seen.has(server.id)) continue;
        seen.add(server.id);
        try {
          const settings = resolveHealthCheck(toConfig(listener.healthCheck), {
            listenerProtocol: listener.protocol,
            serverPort: listener.backendPort ?? server.port,
          });
          entries.push({
            key: probeKey(server.address, settings),
            address: server.address,
            settings,
            target: {
              listenerId: listener.id,
              serverId: server.id,
              healthyThreshold: settings.healthyThreshold,
              unhealthyThreshold: settings.unhealthyThreshold,
            },
          });
        } catch (err) {
          skipped.push({ listenerId: listener.id, serverId: server.id, reason: (err as Error).message });
        }
      }
    }
  }
  // Sorted so the same database yields the same payloads, and an unchanged shard is not rewritten.
  entries.sort((a, b) => cmp(a.target.listenerId, b.target.listenerId) || cmp(a.target.serverId, b.target.serverId));
  const probes = new Map<string, HealthProbe>();
  for (const e of entries) {
    const probe = probes.get(e.key);
    if (probe) probe.targets.push(e.target);
    else probes.set(e.key, { key: e.key, address: e.address, settings: e.settings, targets: [e.target] });
  }
  return { probes, skipped };
}

/** The stored (resolved) object back to the package's input shape: null there means "use the default". */
function toConfig(hc: HealthCheck): HealthCheckConfig {
  return {
    enabled: hc.enabled,
    type: hc.type,
    ...(hc.port !== null ? { port: hc.port } : {}),
    method: hc.method,
    path: hc.path,
    ...(hc.domain !== null ? { domain: hc.domain } : {}),
    httpCodes: hc.httpCodes,
    timeout: hc.timeout,
    interval: hc.interval,
    healthyThreshold: hc.healthyThreshold,
    unhealthyThreshold: hc.unhealthyThreshold,
    ...(hc.udpRequest !== null ? { udpRequest: hc.udpRequest } : {}),
    ...(hc.udpExpect !== null ? { udpExpect: hc.udpExpect } : {}),
  };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
