import { acls, certificates, type Db, listeners, loadBalancers, rules, serverHealth, servers } from '@slb/db';
import { and, eq, inArray } from 'drizzle-orm';

/** The database reads behind the nodes' config: every row compile-lb.ts maps, and nothing else. */

export type ListenerRow = typeof listeners.$inferSelect;
export type RuleRow = typeof rules.$inferSelect;
export type ServerRow = typeof servers.$inferSelect;
export type AclRow = typeof acls.$inferSelect;
export type CertificateRow = typeof certificates.$inferSelect;

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

/** Only these LBs' rows are read, so a change costs in proportion to what changed, not to the fleet. */
export function readLbRows(db: Db, lbIds: string[]): LbRows {
  const lbById = new Map(
    chunked(lbIds, (part) =>
      db
        .select({ id: loadBalancers.id, configVersion: loadBalancers.configVersion, address: loadBalancers.address })
        .from(loadBalancers)
        .where(inArray(loadBalancers.id, part))
        .all(),
    ).map((r) => [r.id, r]),
  );
  // In the order asked for, as the compiled map is then built.
  const lbs = lbIds.map((id) => lbById.get(id)).filter((lb) => lb !== undefined);
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
export function lbOfListener(db: Db, listenerId: string): string | undefined {
  return db.select({ lb: listeners.loadBalancerId }).from(listeners).where(eq(listeners.id, listenerId)).get()?.lb;
}
