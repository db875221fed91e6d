import { isIP } from 'node:net';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { type Db, nodes } from '@slb/db';
import {
  type ControllerMessage,
  type HelloMessage,
  type L7NodeSnapshot,
  type NodeLoadReport,
  NodeMessage,
  type NodeSnapshot,
} from '@slb/model';
import { eq } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import type WebSocket from 'ws';
import { OFFLINE_AFTER_MS } from '../services/nodes.js';
import { compileFleet, type FleetConfig } from './compiler.js';
import { L7_PORT_BASE } from './l7-port.js';
import { place } from './placement.js';

type AnySnapshot = NodeSnapshot | L7NodeSnapshot;

interface Session {
  ws: WebSocket;
  nodeId: string;
  kind: 'l4' | 'l7';
  address: string;
  /** What the node holds once it applies everything sent so far. */
  sent: AnySnapshot | null;
  /** Per sent version: the config version of each LB it carries, for convergence once acked. */
  lbVersionsSent: Map<number, Map<string, number>>;
  ackedLbVersions: Map<string, number>;
  lastSeen: number;
}

export interface LbRuntime {
  status: 'provisioning' | 'active';
  addresses: string[];
  nodes: { nodeId: string; address: string; online: boolean; converged: boolean }[];
}

const checkNodeMessage = TypeCompiler.Compile(NodeMessage);
/** More than this share of L4 nodes vanishing at once looks like our own network fault, not the fleet's. */
const CIRCUIT_BREAKER_SHARE = 0.5;

/**
 * The controller side of the control channel: holds one session per node, compiles the fleet's config
 * on every change, places load balancers, pushes deltas, and tracks acks for convergence.
 */
export class ControlHub {
  private readonly sessions = new Map<string, Session>();
  private placement = new Map<string, string[]>();
  private fleet: FleetConfig | null = null;
  private version: number;
  private pending = false;
  private lastOnlineL4 = new Set<string>();
  private readonly ticker: NodeJS.Timeout;

  constructor(
    private readonly db: Db,
    private readonly log: FastifyBaseLogger,
    now = Date.now(),
  ) {
    // Versions outlive a controller restart: they start from the clock and only grow.
    this.version = now;
    this.ticker = setInterval(() => this.checkLiveness(), 250);
    this.ticker.unref();
  }

  close(): void {
    clearInterval(this.ticker);
    for (const s of this.sessions.values()) s.ws.close(1001, 'controller shutting down');
  }

  /** Something in the database changed: recompile once the current burst of writes is done. */
  changed(): void {
    if (this.pending) return;
    this.pending = true;
    setImmediate(() => {
      this.pending = false;
      try {
        this.recompile();
      } catch (err) {
        this.log.error({ err }, 'config compile failed');
      }
    });
  }

  attach(ws: WebSocket): void {
    let session: Session | null = null;
    ws.on('message', (data, isBinary) => {
      if (isBinary) return this.reject(ws, 'binary messages are not part of the protocol');
      let message: unknown;
      try {
        message = JSON.parse(data.toString());
      } catch {
        return this.reject(ws, 'message is not JSON');
      }
      if (!checkNodeMessage.Check(message)) {
        const first = checkNodeMessage.Errors(message).First();
        return this.reject(ws, `invalid message at ${first?.path || '/'}: ${first?.message}`);
      }
      if (message.type === 'hello') {
        if (session) return this.reject(ws, 'hello was already said');
        if (isIP(message.address) === 0) return this.reject(ws, 'hello.address must be an IP address');
        session = this.open(ws, message);
        return;
      }
      if (!session) return this.reject(ws, 'say hello first');
      session.lastSeen = Date.now();
      if (message.type === 'heartbeat') this.heartbeat(session, message.load);
      else if (message.type === 'ack') this.ack(session, message.version);
      else this.nack(session, message.version, message.reason);
    });
    // A closed channel is not a dead node: it keeps forwarding from its last config. The session stays
    // until its heartbeats are overdue (then it is offline and its LBs move), or the node reconnects.
    ws.on('close', () => this.changed());
  }

  /** Addresses, status and per-node convergence of an LB. */
  runtime(lbId: string, configVersion: number): LbRuntime {
    const now = Date.now();
    const hosting = (this.placement.get(lbId) ?? []).map((id) => this.sessions.get(id)).filter((s) => s !== undefined);
    const view = hosting.map((s) => ({
      nodeId: s.nodeId,
      address: s.address,
      online: now - s.lastSeen <= OFFLINE_AFTER_MS,
      converged: (s.ackedLbVersions.get(lbId) ?? 0) >= configVersion,
    }));
    const online = view.filter((n) => n.online);
    return {
      status: online.length > 0 && online.every((n) => n.converged) ? 'active' : 'provisioning',
      addresses: online.map((n) => n.address),
      nodes: view,
    };
  }

  private reject(ws: WebSocket, reason: string): void {
    this.log.warn({ reason }, 'control message rejected');
    const error: ControllerMessage = { type: 'error', reason };
    ws.send(JSON.stringify(error));
  }

  private open(ws: WebSocket, hello: HelloMessage): Session {
    const previous = this.sessions.get(hello.nodeId);
    if (previous) previous.ws.close(4000, 'replaced by a newer connection of the same node');
    const now = new Date().toISOString();
    const row = this.db.select().from(nodes).where(eq(nodes.id, hello.nodeId)).get();
    if (row) {
      this.db
        .update(nodes)
        .set({ kind: hello.kind, address: hello.address, lastHeartbeatAt: now, updatedAt: now })
        .where(eq(nodes.id, hello.nodeId))
        .run();
    } else {
      this.db
        .insert(nodes)
        .values({
          id: hello.nodeId,
          kind: hello.kind,
          address: hello.address,
          capacityWeight: hello.capacity,
          appliedConfigVersion: hello.appliedVersion,
          lastHeartbeatAt: now,
          createdAt: now,
          updatedAt: now,
        })
        .run();
    }
    // Never send a version the node already has or is past.
    this.version = Math.max(this.version, hello.appliedVersion);
    const session: Session = {
      ws,
      nodeId: hello.nodeId,
      kind: hello.kind,
      address: hello.address,
      sent: null,
      lbVersionsSent: new Map(),
      ackedLbVersions: new Map(),
      lastSeen: Date.now(),
    };
    this.sessions.set(hello.nodeId, session);
    this.log.info(
      { nodeId: hello.nodeId, kind: hello.kind, address: hello.address, appliedVersion: hello.appliedVersion },
      'node connected',
    );
    this.recompile();
    return session;
  }

  private heartbeat(session: Session, load: NodeLoadReport): void {
    const now = new Date().toISOString();
    this.db
      .update(nodes)
      .set({
        lastHeartbeatAt: now,
        activeConnections: load.activeConnections,
        newConnectionsPerSecond: load.newConnectionsPerSecond,
        requestsPerSecond: load.requestsPerSecond,
      })
      .where(eq(nodes.id, session.nodeId))
      .run();
  }

  private ack(session: Session, version: number): void {
    const lbVersions = session.lbVersionsSent.get(version);
    if (!lbVersions) return; // an ack for something we did not send (or already superseded)
    session.ackedLbVersions = lbVersions;
    for (const v of session.lbVersionsSent.keys()) if (v <= version) session.lbVersionsSent.delete(v);
    this.db
      .update(nodes)
      .set({ appliedConfigVersion: version, lastError: null })
      .where(eq(nodes.id, session.nodeId))
      .run();
  }

  private nack(session: Session, version: number, reason: string): void {
    this.log.warn({ nodeId: session.nodeId, version, reason }, 'node refused a config');
    this.db
      .update(nodes)
      .set({ lastError: `version ${version}: ${reason}` })
      .where(eq(nodes.id, session.nodeId))
      .run();
    // The node keeps its last good config; resend from scratch on the next change.
    session.sent = null;
  }

  private onlineL4(now = Date.now()) {
    const rows = new Map(
      this.db
        .select()
        .from(nodes)
        .all()
        .map((n) => [n.id, n]),
    );
    return [...this.sessions.values()]
      .filter((s) => s.kind === 'l4' && now - s.lastSeen <= OFFLINE_AFTER_MS)
      .map((s) => ({ session: s, row: rows.get(s.nodeId) }))
      .filter((n) => n.row !== undefined && !n.row.drain)
      .map((n) => ({
        id: n.session.nodeId,
        capacityWeight: n.row!.capacityWeight,
        activeConnections: n.row!.activeConnections,
      }));
  }

  private checkLiveness(): void {
    const now = Date.now();
    for (const [id, s] of this.sessions) {
      if (s.ws.readyState === s.ws.CLOSED && now - s.lastSeen > OFFLINE_AFTER_MS) this.sessions.delete(id);
    }
    const online = new Set(this.onlineL4().map((n) => n.id));
    const same = online.size === this.lastOnlineL4.size && [...online].every((id) => this.lastOnlineL4.has(id));
    if (!same) this.changed();
  }

  private recompile(): void {
    this.fleet = compileFleet(this.db);
    const online = this.onlineL4();
    const onlineIds = new Set(online.map((n) => n.id));
    const lost = [...this.lastOnlineL4].filter((id) => !onlineIds.has(id)).length;
    if (this.lastOnlineL4.size >= 2 && lost / this.lastOnlineL4.size > CIRCUIT_BREAKER_SHARE) {
      // Circuit breaker: keep the placement; the nodes most likely still serve, we just cannot see them.
      this.log.warn({ lost, of: this.lastOnlineL4.size }, 'most L4 nodes vanished at once: placement frozen');
    } else {
      this.placement = place(this.fleet.lbs, online, this.placement);
      this.lastOnlineL4 = onlineIds;
    }
    const l7Pool = [...this.sessions.values()]
      .filter((s) => s.kind === 'l7' && Date.now() - s.lastSeen <= OFFLINE_AFTER_MS)
      .map((s) => ({ nodeId: s.nodeId, address: s.address, port: L7_PORT_BASE, healthy: true }))
      .sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1));
    for (const session of this.sessions.values()) {
      if (session.ws.readyState !== session.ws.OPEN) continue;
      if (session.kind === 'l4') this.pushL4(session, l7Pool);
      else this.pushL7(session);
    }
  }

  private pushL4(session: Session, l7Pool: NodeSnapshot['l7Nodes']): void {
    const fleet = this.fleet!;
    const lbVersions = new Map<string, number>();
    const listeners: NodeSnapshot['listeners'] = [];
    const taken = new Set<string>();
    for (const lb of fleet.lbs) {
      if (!(this.placement.get(lb.id) ?? []).includes(session.nodeId)) continue;
      lbVersions.set(lb.id, lb.configVersion);
      for (const l of fleet.l4ListenersByLb.get(lb.id) ?? []) {
        // Every LB on a node shares the node's address: the first listener on a port keeps it.
        const key = `${l.protocol === 'udp' ? 'udp' : 'tcp'}/${l.port}`;
        if (taken.has(key)) {
          this.log.warn({ nodeId: session.nodeId, listenerId: l.id, port: l.port }, 'port already served on this node');
          lbVersions.set(lb.id, -1);
          continue;
        }
        taken.add(key);
        listeners.push({ ...l, bindAddresses: [session.address] });
      }
    }
    listeners.sort((a, b) => (a.id < b.id ? -1 : 1));
    this.push(session, { listeners, l7Nodes: l7Pool }, lbVersions);
  }

  private pushL7(session: Session): void {
    const listeners = this.fleet!.l7Listeners.map((l) => ({ ...l, bindAddress: session.address }));
    const lbVersions = new Map(this.fleet!.lbs.map((lb) => [lb.id, lb.configVersion]));
    this.push(session, { listeners }, lbVersions);
  }

  private push(
    session: Session,
    content: { listeners: AnySnapshot['listeners']; l7Nodes?: NodeSnapshot['l7Nodes'] },
    lbVersions: Map<string, number>,
  ): void {
    const previous = session.sent;
    const prevById = new Map((previous?.listeners ?? []).map((l) => [l.id, JSON.stringify(l)]));
    const upsert = content.listeners.filter((l) => prevById.get(l.id) !== JSON.stringify(l));
    const nextIds = new Set(content.listeners.map((l) => l.id));
    const remove = [...prevById.keys()].filter((id) => !nextIds.has(id));
    const l7Changed =
      content.l7Nodes !== undefined &&
      JSON.stringify(content.l7Nodes) !== JSON.stringify((previous as NodeSnapshot | null)?.l7Nodes);
    const lbChanged = [...lbVersions].some(([id, v]) => session.ackedLbVersions.get(id) !== v);
    if (previous && upsert.length === 0 && remove.length === 0 && !l7Changed) {
      // Nothing for the node to do; the LBs it carries are as converged as its last ack says.
      if (lbChanged && session.lbVersionsSent.size === 0) session.ackedLbVersions = lbVersions;
      return;
    }
    const version = ++this.version;
    const generatedAt = new Date().toISOString();
    const snapshot = { version, generatedAt, ...content } as AnySnapshot;
    let message: ControllerMessage;
    if (!previous) {
      message =
        session.kind === 'l4'
          ? { type: 'snapshot', kind: 'l4', snapshot: snapshot as NodeSnapshot }
          : { type: 'snapshot', kind: 'l7', snapshot: snapshot as L7NodeSnapshot };
    } else if (session.kind === 'l4') {
      message = {
        type: 'delta',
        kind: 'l4',
        fromVersion: previous.version,
        version,
        generatedAt,
        upsert: upsert as NodeSnapshot['listeners'],
        remove,
        ...(l7Changed ? { l7Nodes: content.l7Nodes } : {}),
      };
    } else {
      message = {
        type: 'delta',
        kind: 'l7',
        fromVersion: previous.version,
        version,
        generatedAt,
        upsert: upsert as L7NodeSnapshot['listeners'],
        remove,
      };
    }
    session.sent = snapshot;
    session.lbVersionsSent.set(version, lbVersions);
    session.ws.send(JSON.stringify(message));
  }
}
