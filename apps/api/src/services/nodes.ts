import { isIP } from 'node:net';
import { newId, type Store, type Tables } from '@slb/db';
import {
  type CreateNode,
  HEARTBEAT_INTERVAL_MS,
  type ListQuery,
  type Node,
  type NodeJoinToken,
  type RegisteredNode,
  type UpdateNode,
} from '@slb/model';
import { and, asc, eq } from 'drizzle-orm';
import { newJoinToken } from '../control/node-credentials.js';
import { ApiError, notFound, unprocessable } from '../errors.js';
import { checkIfMatch, cursorFilter, nowIso, toPage } from './common.js';

type NodeRow = Tables['nodes']['$inferSelect'];

/** Heartbeats a node may miss in a row and still count as online: one lost or late beat is not an outage. */
export const MISSED_HEARTBEATS_OFFLINE = 3;

/** How long a node may be silent before it is offline: a few missed heartbeats at the nodes' interval. */
export function offlineAfterMs(heartbeatIntervalMs: number): number {
  return MISSED_HEARTBEATS_OFFLINE * heartbeatIntervalMs;
}

/** The nodes' interval is the model's, so a change to it moves this threshold with it. */
export const OFFLINE_AFTER_MS = offlineAfterMs(HEARTBEAT_INTERVAL_MS);

/** Whether the control hub counts a node online; undefined when it holds no session of it (see ControlHub.nodeOnline). */
export type NodeLivenessView = (nodeId: string) => boolean | undefined;

/**
 * The node as the API shows it. Online when the hub says so (it knows a node busy applying, or its own
 * stall) or when the stored heartbeat is fresh (written by whichever replica the node is connected to).
 */
export function toNode(r: NodeRow, now = Date.now(), hubSaysOnline?: boolean): Node {
  const heard = r.lastHeartbeatAt !== null && now - Date.parse(r.lastHeartbeatAt) <= OFFLINE_AFTER_MS;
  const online = heard || hubSaysOnline === true;
  return {
    id: r.id,
    name: r.name,
    kind: r.kind,
    address: r.address,
    status: online ? 'online' : 'offline',
    capacityWeight: r.capacityWeight,
    drain: r.drain,
    appliedConfigVersion: r.appliedConfigVersion,
    lastHeartbeatAt: r.lastHeartbeatAt,
    lastError: r.lastError,
    vipMode: r.vipMode,
    load: {
      activeConnections: r.activeConnections,
      newConnectionsPerSecond: r.newConnectionsPerSecond,
      requestsPerSecond: r.requestsPerSecond,
    },
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}

/**
 * The fleet, cluster-wide: admin only. An admin registers a node and hands it the one-time join token; the
 * node exchanges it for its own credential (see control/node-credentials.ts).
 */
export class NodeService {
  constructor(
    private readonly store: Store,
    private readonly liveness: NodeLivenessView = () => undefined,
  ) {}

  /** A stored node with the status placement uses (see toNode). */
  view(row: NodeRow, now = Date.now()): Node {
    return toNode(row, now, this.liveness(row.id));
  }

  async find(id: string): Promise<NodeRow> {
    const { t } = this.store;
    const [row] = await this.store.read((q) => q.select().from(t.nodes).where(eq(t.nodes.id, id)));
    if (!row) throw notFound('node', id);
    return row;
  }

  async list(query: ListQuery) {
    const { t } = this.store;
    const limit = query.limit ?? 50;
    const rows = await this.store.read((q) =>
      q
        .select()
        .from(t.nodes)
        .where(and(cursorFilter(t.nodes.id, query.cursor)))
        .orderBy(asc(t.nodes.id))
        .limit(limit + 1),
    );
    return toPage(rows, limit, (r) => this.view(r));
  }

  update(id: string, input: UpdateNode, ifMatch?: string): Promise<NodeRow> {
    const { t } = this.store;
    return this.store.write(async (q) => {
      const row = await this.find(id);
      checkIfMatch(ifMatch, row.revision);
      const next = {
        capacityWeight: input.capacityWeight ?? row.capacityWeight,
        drain: input.drain ?? row.drain,
        revision: row.revision + 1,
        updatedAt: nowIso(),
      };
      await q.update(t.nodes).set(next).where(eq(t.nodes.id, id));
      return { ...row, ...next };
    });
  }

  async register(input: CreateNode): Promise<RegisteredNode> {
    if (isIP(input.address) === 0) throw unprocessable('/address', 'must be an IPv4 or IPv6 address');
    const { t } = this.store;
    return this.store.write(async (q) => {
      const [clash] = await q
        .select({ id: t.nodes.id })
        .from(t.nodes)
        .where(and(eq(t.nodes.kind, input.kind), eq(t.nodes.address, input.address)));
      if (clash) throw new ApiError('conflict', `${input.kind} node ${clash.id} already has address ${input.address}`);
      const now = nowIso();
      const join = newJoinToken();
      const [row] = await q
        .insert(t.nodes)
        .values({
          id: newId('node'),
          name: input.name ?? null,
          kind: input.kind,
          address: input.address,
          capacityWeight: input.capacityWeight ?? 100,
          joinTokenHash: join.hash,
          joinTokenExpiresAt: join.expiresAt,
          createdAt: now,
          updatedAt: now,
        })
        .returning();
      if (!row) throw new Error('an insert … returning gave no row');
      return { ...this.view(row), joinToken: join.token };
    });
  }

  /** A new join token; the node's current credential keeps working until the node uses it. */
  newJoinToken(id: string): Promise<NodeJoinToken> {
    const { t } = this.store;
    return this.store.write(async (q) => {
      const row = await this.find(id);
      const join = newJoinToken();
      await q
        .update(t.nodes)
        .set({
          joinTokenHash: join.hash,
          joinTokenExpiresAt: join.expiresAt,
          revision: row.revision + 1,
          updatedAt: nowIso(),
        })
        .where(eq(t.nodes.id, id));
      return { nodeId: id, joinToken: join.token, expiresAt: join.expiresAt };
    });
  }

  /** Removes the node and with it its credential: the caller closes its session. */
  async remove(id: string, ifMatch?: string): Promise<void> {
    const { t } = this.store;
    await this.store.write(async (q) => {
      const row = await this.find(id);
      checkIfMatch(ifMatch, row.revision);
      await q.delete(t.nodes).where(eq(t.nodes.id, id));
    });
  }
}
