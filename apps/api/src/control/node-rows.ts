import { isIP } from 'node:net';
import type { Store, Tables } from '@slb/db';
import type { ControllerMessage, HelloMessage, NodeLoadReport } from '@slb/model';
import { eq } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import type WebSocket from 'ws';
import { enrollLegacy, isEnrolled, type NodeIdentity } from './node-credentials.js';

/**
 * Who a hello is from. With a credential, its id, kind and address are the credential's: the hello's own
 * id and address are not read, and a kind other than the credential's is refused (that node would get
 * a config it cannot serve). Without one (the legacy shared token), the hello names the node, but never one
 * that holds a credential of its own. Otherwise the reason to refuse, and whether the connection is closed
 * (a bad value may be corrected by the next hello; a node refused for who it is would wait forever).
 */
export async function helloIdentity(
  store: Store,
  hello: HelloMessage,
  identity: NodeIdentity | undefined,
): Promise<NodeIdentity | { reason: string; close: boolean }> {
  if (identity) {
    if (hello.kind !== identity.kind) return { reason: `this credential is for an ${identity.kind} node`, close: true };
    return identity;
  }
  if (isIP(hello.address) === 0) return { reason: 'hello.address must be an IP address', close: false };
  if (await isEnrolled(store, hello.nodeId)) {
    return { reason: 'this node has its own credential: the shared token cannot speak for it', close: true };
  }
  return { nodeId: hello.nodeId, kind: hello.kind, address: hello.address };
}

/**
 * Marks the node seen at hello. An enrolled node's row must exist (deleted means revoked); a legacy node's
 * row is created at its first hello (with the default capacity: the admin sets it, not the node).
 */
export function touchNodeRow(store: Store, who: NodeIdentity, legacy: boolean): Promise<boolean> {
  const { t } = store;
  const now = new Date().toISOString();
  return store.write(async (q) => {
    const set = legacy ? { kind: who.kind, address: who.address } : {};
    const [row] = await q
      .update(t.nodes)
      .set({ ...set, lastHeartbeatAt: now, updatedAt: now })
      .where(eq(t.nodes.id, who.nodeId))
      .returning({ id: t.nodes.id });
    if (row) return true;
    if (!legacy) return false;
    await q.insert(t.nodes).values({
      id: who.nodeId,
      kind: who.kind,
      address: who.address,
      lastHeartbeatAt: now,
      createdAt: now,
      updatedAt: now,
    });
    return true;
  });
}

/** A node that joined with the legacy shared token and has no credential yet is sent its own. */
export async function sendLegacyCredential(
  store: Store,
  ws: WebSocket,
  nodeId: string,
  log: FastifyBaseLogger,
): Promise<void> {
  const credential = await enrollLegacy(store, nodeId);
  if (!credential) return;
  const message: ControllerMessage = { type: 'credential', nodeId, credential };
  ws.send(JSON.stringify(message));
  log.warn({ nodeId }, 'node joined with the legacy shared token: enrolled, credential sent');
}

type NodeRowChange = Partial<Tables['nodes']['$inferInsert']>;

async function updateNode(store: Store, nodeId: string, set: NodeRowChange): Promise<void> {
  const { t } = store;
  await store.write((q) => q.update(t.nodes).set(set).where(eq(t.nodes.id, nodeId)));
}

/** The node's last heartbeat and the load it reported (already clamped). */
export function recordHeartbeat(store: Store, nodeId: string, load: NodeLoadReport): Promise<void> {
  return updateNode(store, nodeId, {
    lastHeartbeatAt: new Date().toISOString(),
    activeConnections: load.activeConnections,
    newConnectionsPerSecond: load.newConnectionsPerSecond,
    requestsPerSecond: load.requestsPerSecond,
  });
}

/** `lastError` names the listeners the node could not build with this version (null: it built them all). */
export function recordApplied(
  store: Store,
  nodeId: string,
  version: number,
  lastError: string | null = null,
): Promise<void> {
  return updateNode(store, nodeId, { appliedConfigVersion: version, lastError });
}

export function recordError(store: Store, nodeId: string, error: string | null): Promise<void> {
  return updateNode(store, nodeId, { lastError: error });
}

/** How an L4 node can carry VIPs, from its hello: shown on `GET /v1/nodes`. */
export function recordVipMode(store: Store, nodeId: string, mode: 'active-active' | 'active-standby'): Promise<void> {
  return updateNode(store, nodeId, { vipMode: mode });
}

export interface PlacementRow {
  capacityWeight: number;
  activeConnections: number;
  drain: boolean;
}

/** What placement reads from the nodes' rows (set by the admin, and by heartbeats). */
export async function placementRows(store: Store): Promise<Map<string, PlacementRow>> {
  const { t } = store;
  const rows = await store.read((q) =>
    q
      .select({
        id: t.nodes.id,
        capacityWeight: t.nodes.capacityWeight,
        activeConnections: t.nodes.activeConnections,
        drain: t.nodes.drain,
      })
      .from(t.nodes),
  );
  return new Map(rows.map(({ id, ...row }) => [id, row]));
}
