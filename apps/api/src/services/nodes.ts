import { type Db, nodes } from '@slb/db';
import type { ListQuery, Node, UpdateNode } from '@slb/model';
import { and, asc, eq } from 'drizzle-orm';
import { notFound } from '../errors.js';
import { checkIfMatch, cursorFilter, nowIso, toPage } from './common.js';

type NodeRow = typeof nodes.$inferSelect;

/** Heartbeats come every second; three missed ones make a node offline. */
export const OFFLINE_AFTER_MS = 3_000;

export function toNode(r: NodeRow, now = Date.now()): Node {
  const online = r.lastHeartbeatAt !== null && now - Date.parse(r.lastHeartbeatAt) <= OFFLINE_AFTER_MS;
  return {
    id: r.id,
    kind: r.kind,
    address: r.address,
    status: online ? 'online' : 'offline',
    capacityWeight: r.capacityWeight,
    drain: r.drain,
    appliedConfigVersion: r.appliedConfigVersion,
    lastHeartbeatAt: r.lastHeartbeatAt,
    lastError: r.lastError,
    load: {
      activeConnections: r.activeConnections,
      newConnectionsPerSecond: r.newConnectionsPerSecond,
      requestsPerSecond: r.requestsPerSecond,
    },
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}

/** The fleet, cluster-wide: admin only. Nodes register themselves over the control channel. */
export class NodeService {
  constructor(private readonly db: Db) {}

  find(id: string): NodeRow {
    const row = this.db.select().from(nodes).where(eq(nodes.id, id)).get();
    if (!row) throw notFound('node', id);
    return row;
  }

  list(query: ListQuery) {
    const limit = query.limit ?? 50;
    const rows = this.db
      .select()
      .from(nodes)
      .where(and(cursorFilter(nodes.id, query.cursor)))
      .orderBy(asc(nodes.id))
      .limit(limit + 1)
      .all();
    return toPage(rows, limit, (r) => toNode(r));
  }

  update(id: string, input: UpdateNode, ifMatch?: string): NodeRow {
    return this.db.transaction(() => {
      const row = this.find(id);
      checkIfMatch(ifMatch, row.revision);
      const next = {
        capacityWeight: input.capacityWeight ?? row.capacityWeight,
        drain: input.drain ?? row.drain,
        revision: row.revision + 1,
        updatedAt: nowIso(),
      };
      this.db.update(nodes).set(next).where(eq(nodes.id, id)).run();
      return { ...row, ...next };
    });
  }
}
