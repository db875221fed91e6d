import type { Queries, Store, Tables } from '@slb/db';
import { and, eq, inArray } from 'drizzle-orm';

/** The database reads behind the nodes' config: every row compile-lb.ts maps, and nothing else. */

export type ListenerRow = Tables['listeners']['$inferSelect'];
export type RuleRow = Tables['rules']['$inferSelect'];
export type ServerRow = Tables['servers']['$inferSelect'];
export type AclRow = Tables['acls']['$inferSelect'];
export type CertificateRow = Tables['certificates']['$inferSelect'];

export interface LbSummary {
  id: string;
  configVersion: number;
  mode: 'all' | 'spread';
  nodeCount: number | null;
}

/** What the nodes' config of some LBs is made of, as read from the database. */
export interface LbRows {
  /** The LBs asked for that exist, in the order asked for. */
  lbs: { id: string; configVersion: number; address: string | null }[];
  /** Their running listeners, by id. */
  listeners: ListenerRow[];
  /** Those listeners' rules, by id. */
  rules: RuleRow[];
  /** The servers of every group a listener or rule forwards to, by id. */
  servers: ServerRow[];
  /** `listenerId/serverId` of each server a health check of that listener found abnormal. */
  unhealthy: ReadonlySet<string>;
  acls: ReadonlyMap<string, AclRow>;
  /** The certificates of the HTTPS listeners (private keys as stored). */
  certificates: ReadonlyMap<string, CertificateRow>;
}

export const healthKey = (listenerId: string, serverId: string) => `${listenerId}/${serverId}`;
const byId = <T extends { id: string }>(a: T, b: T) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const CHUNK = 500; // SQLite bound-variable limit

async function chunked<T, R>(items: T[], read: (part: T[]) => Promise<R[]>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(...(await read(items.slice(i, i + CHUNK))));
  return out;
}

/** The columns of an LbSummary, read for the whole fleet or for the LBs a write names. */
const lbSummary = (t: Tables) => ({
  id: t.loadBalancers.id,
  configVersion: t.loadBalancers.configVersion,
  mode: t.loadBalancers.placementMode,
  nodeCount: t.loadBalancers.placementNodeCount,
});

/** The fleet-wide read the hub makes on every full refresh, prepared once per store. */
const prepared = new WeakMap<Store, () => Promise<LbSummary[]>>();

/** Every LB, in id order (ids grow with time: creation order, on either engine). */
export function listLbs(store: Store): Promise<LbSummary[]> {
  let run = prepared.get(store);
  if (run === undefined) {
    const { t } = store;
    const query = store.prepare('hub-list-lbs', (q) =>
      q.select(lbSummary(t)).from(t.loadBalancers).orderBy(t.loadBalancers.id),
    );
    run = () => query({});
    prepared.set(store, run);
  }
  return run();
}

/** These LBs' rows (a write names the LB it changed; the hub then need not read the whole fleet). */
export async function lbsByIds(store: Store, ids: string[]): Promise<Map<string, LbSummary>> {
  const { t } = store;
  const rows = await store.read((q) =>
    chunked(ids, (part) => q.select(lbSummary(t)).from(t.loadBalancers).where(inArray(t.loadBalancers.id, part))),
  );
  return new Map(rows.map((r) => [r.id, r]));
}

/**
 * Only these LBs' rows are read, so a change costs in proportion to what changed, not to the fleet. One
 * store read: on SQLite no write lands between its queries.
 */
export function readLbRows(store: Store, lbIds: string[]): Promise<LbRows> {
  return store.read((q) => lbRowsOn(q, store.t, lbIds));
}

async function lbRowsOn(q: Queries, t: Tables, lbIds: string[]): Promise<LbRows> {
  const lbById = new Map(
    (
      await chunked(lbIds, (part) =>
        q
          .select({
            id: t.loadBalancers.id,
            configVersion: t.loadBalancers.configVersion,
            address: t.loadBalancers.address,
          })
          .from(t.loadBalancers)
          .where(inArray(t.loadBalancers.id, part)),
      )
    ).map((r) => [r.id, r]),
  );
  // In the order asked for, as the compiled map is then built.
  const lbs = lbIds.map((id) => lbById.get(id)).filter((lb) => lb !== undefined);
  const listenerRows = (
    await chunked(lbIds, (part) =>
      q
        .select()
        .from(t.listeners)
        .where(and(inArray(t.listeners.loadBalancerId, part), eq(t.listeners.status, 'running'))),
    )
  ).sort(byId);
  const listenerIds = listenerRows.map((l) => l.id);
  const ruleRows = (
    await chunked(listenerIds, (part) => q.select().from(t.rules).where(inArray(t.rules.listenerId, part)))
  ).sort(byId);
  const groupIds = [...new Set([...listenerRows.map((l) => l.serverGroupId), ...ruleRows.map((r) => r.serverGroupId)])];
  const serverRows = (
    await chunked(groupIds, (part) => q.select().from(t.servers).where(inArray(t.servers.serverGroupId, part)))
  ).sort(byId);
  const unhealthy = new Set(
    (
      await chunked(listenerIds, (part) =>
        q
          .select({ listenerId: t.serverHealth.listenerId, serverId: t.serverHealth.serverId })
          .from(t.serverHealth)
          .where(and(inArray(t.serverHealth.listenerId, part), eq(t.serverHealth.status, 'abnormal'))),
      )
    ).map((h) => healthKey(h.listenerId, h.serverId)),
  );
  const aclIds = [...new Set(listenerRows.map((l) => l.aclId).filter((id): id is string => id !== null))];
  const aclRows = new Map(
    (await chunked(aclIds, (part) => q.select().from(t.acls).where(inArray(t.acls.id, part)))).map((a) => [a.id, a]),
  );
  const certIds = [
    ...new Set(
      listenerRows
        .filter((l) => l.protocol === 'https')
        .flatMap((l) => [l.certificateId, ...l.additionalCertificateIds]),
    ),
  ].filter((id): id is string => id !== null);
  const certRows = new Map(
    (await chunked(certIds, (part) => q.select().from(t.certificates).where(inArray(t.certificates.id, part)))).map(
      (c) => [c.id, c],
    ),
  );
  return {
    lbs,
    listeners: listenerRows,
    rules: ruleRows,
    servers: serverRows,
    unhealthy,
    acls: aclRows,
    certificates: certRows,
  };
}

/** The LB a listener belongs to (undefined: no such listener). */
export async function lbOfListener(store: Store, listenerId: string): Promise<string | undefined> {
  const { t } = store;
  const [row] = await store.read((q) =>
    q.select({ lb: t.listeners.loadBalancerId }).from(t.listeners).where(eq(t.listeners.id, listenerId)),
  );
  return row?.lb;
}
