import { type PoolConfig, poolImpact } from '@slb/balancing';
import type { Store } from '@slb/db';
import type { PlanListenerImpact } from '@slb/model';
import { inArray } from 'drizzle-orm';
import { compileLbs } from '../control/compiler.js';

/** One pool the nodes balance over: a TCP/UDP listener's backends, or one server group of an HTTP(S) listener. */
interface ForwardingPool {
  loadBalancerId: string;
  listenerId: string;
  protocol: string;
  port: number;
  serverGroupId: string;
  pool: PoolConfig;
}

/**
 * The pools these LBs forward over, compiled exactly as the control hub compiles them for the nodes (running
 * listeners only), keyed by listener, and for HTTP(S) by listener and server group: the L4 node balances a
 * TCP/UDP listener over its backends, an L7 node each server group of an HTTP(S) listener on its own.
 */
export async function forwardingPools(store: Store, lbIds: string[]): Promise<Map<string, ForwardingPool>> {
  const pools = new Map<string, ForwardingPool>();
  if (lbIds.length === 0) return pools;
  const { t } = store;
  // The compiled L4 config does not name the group; the rows do (only running listeners are compiled).
  const rows = await store.read((q) =>
    q
      .select({ id: t.listeners.id, serverGroupId: t.listeners.serverGroupId })
      .from(t.listeners)
      .where(inArray(t.listeners.loadBalancerId, lbIds)),
  );
  const groupOf = new Map(rows.map((l) => [l.id, l.serverGroupId]));
  for (const lb of (await compileLbs(store, lbIds)).values()) {
    const l7 = new Map(lb.l7.map(({ config }) => [config.id, config]));
    for (const { config: l } of lb.l4) {
      const base = { loadBalancerId: l.loadBalancerId, listenerId: l.id, protocol: l.protocol, port: l.port };
      const http = l7.get(l.id);
      if (http === undefined) {
        const pool = { scheduler: l.scheduler, drainSeconds: l.connectionDrainTimeout, backends: l.backends };
        pools.set(l.id, { ...base, serverGroupId: groupOf.get(l.id) ?? '', pool });
        continue;
      }
      for (const group of http.serverGroups) {
        const pool = { scheduler: http.scheduler, drainSeconds: l.connectionDrainTimeout, backends: group.backends };
        pools.set(`${l.id}/${group.id}`, { ...base, serverGroupId: group.id, pool });
      }
    }
  }
  return pools;
}

/** Every pool whose forwarding differs between the two compilations, in listener and group order. */
export function comparePools(
  before: Map<string, ForwardingPool>,
  after: Map<string, ForwardingPool>,
): PlanListenerImpact[] {
  const keys = [...new Set([...before.keys(), ...after.keys()])].sort();
  const out: PlanListenerImpact[] = [];
  for (const key of keys) {
    const b = before.get(key);
    const a = after.get(key);
    const impact = poolImpact(b?.pool ?? null, a?.pool ?? null);
    if (impact === null) continue;
    const { pool, ...where } = (a ?? b)!;
    out.push({ ...where, scheduler: pool.scheduler, ...impact });
  }
  return out;
}
