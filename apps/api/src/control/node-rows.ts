import { isIP } from 'node:net';
import { type Db, nodes } from '@slb/db';
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
export function helloIdentity(
  db: Db,
  hello: HelloMessage,
  identity: NodeIdentity | undefined,
): NodeIdentity | { reason: string; close: boolean } {
  if (identity) {
    if (hello.kind !== identity.kind) return { reason: `this credential is for an ${identity.kind} node`, close: true };
    return identity;
  }
  if (isIP(hello.address) === 0) return { reason: 'hello.address must be an IP address', close: false };
  if (isEnrolled(db, hello.nodeId)) {
    return { reason: 'this node has its own credential: the shared token cannot speak for it', close: true };
  }
  return { nodeId: hello.nodeId, kind: hello.kind, address: hello.address };
}

/**
 * Marks the node seen at hello. An enrolled node's row must exist (deleted means revoked); a legacy node's
 * row is created at its first hello (with the default capacity: the admin sets it, not the node).
 */
export function touchNodeRow(db: Db, who: NodeIdentity, legacy: boolean): boolean {
  const now = new Date().toISOString();
  const row = db.select({ id: nodes.id }).from(nodes).where(eq(nodes.id, who.nodeId)).get();
  if (row) {
    const set = legacy ? { kind: who.kind, address: who.address } : {};
    db.update(nodes)
      .set({ ...set, lastHeartbeatAt: now, updatedAt: now })
      .where(eq(nodes.id, who.nodeId))
      .run();
    return true;
  }
  if (!legacy) return false;
  db.insert(nodes)
    .values({
      id: who.nodeId,
      kind: who.kind,
      address: who.address,
      lastHeartbeatAt: now,
      createdAt: now,
      updatedAt: now,
    })
    .run();
  return true;
}

/** A node that joined with the legacy shared token and has no credential yet is sent its own. */
export function sendLegacyCredential(db: Db, ws: WebSocket, nodeId: string, log: FastifyBaseLogger): void {
  const credential = enrollLegacy(db, nodeId);
  if (!credential) return;
  const message: ControllerMessage = { type: 'credential', nodeId, credential };
  ws.send(JSON.stringify(message));
  log.warn({ nodeId }, 'node joined with the legacy shared token: enrolled, credential sent');
}

/** The node's last heartbeat and the load it reported (already clamped). */
export function recordHeartbeat(db: Db, nodeId: string, load: NodeLoadReport): void {
  db.update(nodes)
    .set({
      lastHeartbeatAt: new Date().toISOString(),
      activeConnections: load.activeConnections,
      newConnectionsPerSecond: load.newConnectionsPerSecond,
      requestsPerSecond: load.requestsPerSecond,
    })
    .where(eq(nodes.id, nodeId))
    .run();
}

/** `lastError` names the listeners the node could not build with this version (null: it built them all). */
export function recordApplied(db: Db, nodeId: string, version: number, lastError: string | null = null): void {
  db.update(nodes).set({ appliedConfigVersion: version, lastError }).where(eq(nodes.id, nodeId)).run();
}

export function recordError(db: Db, nodeId: string, error: string | null): void {
  db.update(nodes).set({ lastError: error }).where(eq(nodes.id, nodeId)).run();
}

/** How an L4 node can carry VIPs, from its hello: shown on `GET /v1/nodes`. */
export function recordVipMode(db: Db, nodeId: string, mode: 'active-active' | 'active-standby'): void {
  db.update(nodes).set({ vipMode: mode }).where(eq(nodes.id, nodeId)).run();
}

/** What placement reads from the nodes' rows (set by the admin, and by heartbeats). */
export function placementRows(
  db: Db,
): Map<string, { capacityWeight: number; activeConnections: number; drain: boolean }> {
  const rows = db
    .select({
      id: nodes.id,
      capacityWeight: nodes.capacityWeight,
      activeConnections: nodes.activeConnections,
      drain: nodes.drain,
    })
    .from(nodes)
    .all();
  return new Map(rows.map(({ id, ...row }) => [id, row]));
}
