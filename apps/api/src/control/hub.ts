import { TypeCompiler } from '@sinclair/typebox/compiler';
import { type Db, listeners as listenerTable, nodes } from '@slb/db';
import {
  CONTROL_CHANNEL_MAX_BYTES,
  type ControllerMessage,
  type HelloMessage,
  L7_PORT_BASE,
  type L7NodeSnapshot,
  type ListenerFailure,
  type NodeLoadReport,
  NodeMessage,
  type NodeSnapshot,
  type SnapshotBackendDeny,
  type TrafficReport,
} from '@slb/model';
import { eq } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import type WebSocket from 'ws';
import { type BindState, bindEvents } from '../events/bind-events.js';
import { type ServingChange, ServingLog, type ServingNode } from '../events/serving-log.js';
import type { EventSink } from '../events/store.js';
import { OFFLINE_AFTER_MS } from '../services/nodes.js';
import {
  type CompiledLb,
  compileLbs,
  type L4ListenerConfig,
  type L7ListenerConfig,
  type LbSummary,
  lbsByIds,
  listLbs,
} from './compiler.js';
import { l4NodeAddresses } from './l7-trust.js';
import type { NodeIdentity } from './node-credentials.js';
import { clampLoad } from './node-reports.js';
import {
  helloIdentity,
  recordApplied,
  recordError,
  recordHeartbeat,
  recordVipMode,
  sendLegacyCredential,
  touchNodeRow,
} from './node-sessions.js';
import { place } from './placement.js';
import { chooseVipBinders, sameServing, type VipNode, type VipServing } from './vip-serving.js';

interface Session {
  ws: WebSocket;
  nodeId: string;
  kind: 'l4' | 'l7';
  address: string;
  /** The version last sent, and each listener as sent (serialised before per-node fields), for deltas. */
  sentVersion: number | null;
  sentJson: Map<string, string>;
  sentL7Nodes: string | null;
  /** (L7) The L4 node addresses last sent (`l4Nodes`, the peers its PROXY ports accept), as JSON. */
  sentL4Nodes: string | null;
  /** Listener ids sent per LB, and (L4) the LB holding each port on this node: enough to resend one LB alone. */
  sentByLb: Map<string, string[]>;
  portOwner: Map<string, string>;
  /** Per sent version: the LB config versions it carries (all, or the changed ones), for convergence once acked. */
  lbVersionsSent: Map<number, LbVersions>;
  ackedLbVersions: Map<string, number>;
  /** Listeners the node last reported it could not build or bind (it retries binds), and their LBs. */
  failures: ListenerFailure[];
  failedLbs: Set<string>;
  /** The acked version whose failed listeners the node's lastError names (null: it names none). */
  failuresInLastError: number | null;
  /** The node's runtime can share a VIP:port with its peers (SO_REUSEPORT): it may serve active-active. */
  reusePort: boolean;
  /** The addresses it said at hello it serves listeners on (see chooseVipBinders). */
  boundVips: ReadonlySet<string>;
  lastSeen: number;
}

export interface LbRuntime {
  status: 'provisioning' | 'active';
  addresses: string[];
  nodes: {
    nodeId: string;
    kind: 'l4' | 'l7';
    address: string;
    online: boolean;
    converged: boolean;
    /** L4: whether the node binds the LB's VIP now (active) or takes it over if the binder goes (standby). */
    role?: 'active' | 'standby';
    /** What keeps one of the LB's listeners from running there (a bind that fails and is being retried). */
    error?: string;
  }[];
}

const checkNodeMessage = TypeCompiler.Compile(NodeMessage);
/** How often node liveness is checked. */
const LIVENESS_TICK_MS = 250;
/** More than this share of L4 nodes vanishing at once looks like our own network fault, not the fleet's. */
const CIRCUIT_BREAKER_SHARE = 0.5;
/** How long after a controller start L7 nodes have to reconnect before the L4 nodes stop using them. */
export const L7_REJOIN_GRACE_MS = 10_000;

export interface ControlHubOptions {
  /** Default {@link L7_REJOIN_GRACE_MS}. */
  l7RejoinGraceMs?: number;
  /** Largest message sent to a node; default (and what nodes accept) {@link CONTROL_CHANNEL_MAX_BYTES}. */
  maxMessageBytes?: number;
  /** Decrypts a stored private key for the L7 nodes (SecretBox.open); default: stored in clear (tests). */
  openKey?: (stored: string) => string;
  /** Where nodes joining and leaving LBs, and their bind failures, are recorded; default: nowhere. */
  events?: EventSink;
  /** A flapping node's joins and leaves are recorded at most once per this many ms (see ServingLog); default 30,000. */
  nodeEventIntervalMs?: number;
}

/**
 * The L7 nodes the previous controller last saw online: those whose heartbeat was stored within the
 * offline threshold of the newest heartbeat of any node (the controller stops storing them when it dies).
 */
function lastKnownL7(db: Db): Map<string, string> {
  const rows = db.select().from(nodes).all();
  const beats = rows.map((r) => (r.lastHeartbeatAt ? Date.parse(r.lastHeartbeatAt) : 0));
  const newest = Math.max(0, ...beats);
  return new Map(
    rows
      .filter((r, i) => r.kind === 'l7' && beats[i]! > 0 && beats[i]! >= newest - OFFLINE_AFTER_MS)
      .map((r) => [r.id, r.address]),
  );
}

/**
 * The controller side of the control channel: holds one session per node, compiles the fleet's config
 * on every change, places load balancers, pushes deltas, and tracks acks for convergence.
 */
export class ControlHub {
  private readonly sessions = new Map<string, Session>();
  private placement = new Map<string, string[]>();
  /** Per LB, how its hosts carry its VIP and which of them bind it (see chooseVipBinders). */
  private serving = new Map<string, VipServing>();
  /** Compiled LBs, reused while their configVersion holds and no health report touched them. */
  private readonly compiled = new Map<string, CompiledLb>();
  private readonly dirty = new Set<string>();
  /** LBs named by writes since the last compile, or every LB (`scanAll`). */
  private readonly touched = new Set<string>();
  private scanAll = true;
  private lbs: LbSummary[] = [];
  private version: number;
  private pending = false;
  private lastOnlineL4 = new Set<string>();
  private readonly ticker: NodeJS.Timeout;
  private lastTick = Date.now();
  /**
   * After a restart, the L7 nodes the previous controller knew, kept in the L4 nodes' L7 pool until they
   * reconnect (or the grace ends): L4 nodes that reconnect first would otherwise get an empty pool and
   * refuse every HTTP connection until the L7 nodes are back. nodeId → address.
   */
  private readonly rejoining: Map<string, string>;
  private rejoinTimer: NodeJS.Timeout | null = null;
  private readonly maxMessageBytes: number;
  /** The fleet's L4 node addresses as of the last compile (the L7 nodes' `l4Nodes`). */
  private l4Addresses: string[] = [];
  /** The backend deny set every first snapshot carries (see setBackendDeny). */
  private backendDeny: () => SnapshotBackendDeny[] = () => [];

  /** Where snapshots get the backend deny set from: the API's policy (its own endpoints and the nodes'). */
  setBackendDeny(read: () => SnapshotBackendDeny[]): void {
    this.backendDeny = read;
  }

  /** Where the heartbeats' traffic summaries go (the API's TrafficIngest); absent: dropped. */
  private trafficSink: ((nodeId: string, report: TrafficReport) => void) | undefined;
  setTrafficSink(sink: (nodeId: string, report: TrafficReport) => void): void {
    this.trafficSink = sink;
  }

  /**
   * Only listeners this node was sent count: a node cannot write into another tenant's metrics by naming
   * its listener. Never in the way of the heartbeat: whatever the sink does, the session carries on.
   */
  private traffic(session: Session, report: TrafficReport): void {
    if (this.trafficSink === undefined) return;
    const listeners = report.listeners.filter((l) => session.sentJson.has(l.id));
    try {
      this.trafficSink(session.nodeId, { bootId: report.bootId, listeners });
    } catch (err) {
      this.log.error({ err, nodeId: session.nodeId }, 'traffic summary not taken');
    }
  }

  /** The deployment's session-sync prefix, sent in every first snapshot (the nodes' default namespace). */
  private sessionSyncPrefix: string | undefined;
  setSessionSyncPrefix(prefix: string): void {
    this.sessionSyncPrefix = prefix;
  }
  private readonly openKey: (stored: string) => string;
  private readonly events: EventSink | null;
  private readonly servingLog: ServingLog;
  private servingTimer: NodeJS.Timeout | null = null;
  /** Something that decides which node serves which LB moved since the serving log last looked. */
  private servingDirty = true;
  private observedL7Pool: string | null = null;
  /** LBs with HTTP/HTTPS listeners: every online L7 node serves them. */
  private readonly l7Lbs = new Set<string>();
  /** Per node (across its sessions), the listeners it last said it cannot bind: bind events on change only. */
  private readonly binds = new Map<string, BindState>();

  constructor(
    private readonly db: Db,
    private readonly log: FastifyBaseLogger,
    now = Date.now(),
    options: ControlHubOptions = {},
  ) {
    // Versions outlive a controller restart: they start from the clock and only grow.
    this.version = now;
    this.maxMessageBytes = options.maxMessageBytes ?? CONTROL_CHANNEL_MAX_BYTES;
    this.openKey = options.openKey ?? ((stored) => stored);
    this.events = options.events ?? null;
    this.servingLog = new ServingLog({ intervalMs: options.nodeEventIntervalMs });
    this.ticker = setInterval(() => this.checkLiveness(), LIVENESS_TICK_MS);
    this.ticker.unref();
    this.rejoining = lastKnownL7(db);
    if (this.rejoining.size > 0) {
      this.rejoinTimer = setTimeout(() => {
        this.rejoinTimer = null;
        if (this.rejoining.size === 0) return;
        this.log.warn({ nodes: [...this.rejoining.keys()] }, 'L7 nodes did not reconnect: out of the L7 pool');
        this.rejoining.clear();
        this.changed();
      }, options.l7RejoinGraceMs ?? L7_REJOIN_GRACE_MS);
      this.rejoinTimer.unref();
    }
  }

  /**
   * Stops for good. The sessions' sockets close after this returns (and their nodes may still send a last
   * heartbeat): nothing they trigger may touch the database, which the app closes next.
   */
  close(): void {
    this.closed = true;
    clearInterval(this.ticker);
    if (this.rejoinTimer) clearTimeout(this.rejoinTimer);
    if (this.servingTimer) clearTimeout(this.servingTimer);
    for (const s of this.sessions.values()) s.ws.close(1001, 'controller shutting down');
  }

  private closed = false;

  /**
   * Something in the database changed: recompile once the current burst of writes is done. A write names the
   * LB it changed, so only that LB's rows are read again; without a name the whole fleet is.
   */
  changed(lbId?: string): void {
    if (this.closed) return;
    if (lbId === undefined) this.scanAll = true;
    else this.touched.add(lbId);
    if (this.pending) return;
    this.pending = true;
    setImmediate(() => {
      this.pending = false;
      if (this.closed) return;
      try {
        this.recompile();
      } catch (err) {
        this.log.error({ err }, 'config compile failed');
      }
    });
  }

  /**
   * A node's connection, authenticated as `identity` (from its credential); without one it joined with the
   * legacy shared token, and its hello says who it is (only for a node without a credential of its own).
   */
  attach(ws: WebSocket, identity?: NodeIdentity): void {
    let session: Session | null = null;
    ws.on('message', (data, isBinary) => {
      if (this.closed) return;
      // A session replaced or revoked: whatever it still says is not heard.
      if (session && this.sessions.get(session.nodeId) !== session) return;
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
        const who = helloIdentity(this.db, message, identity);
        if ('reason' in who) return who.close ? this.refuse(ws, who.reason) : this.reject(ws, who.reason);
        session = this.open(ws, who, message, identity === undefined);
        return;
      }
      if (!session) return this.reject(ws, 'say hello first');
      session.lastSeen = Date.now();
      if (message.type === 'heartbeat') {
        this.heartbeat(session, message.load, message.failedListeners);
        if (message.traffic !== undefined) this.traffic(session, message.traffic);
      } else if (message.type === 'ack') this.ack(session, message.version, message.failedListeners);
      else this.nack(session, message.version, message.reason);
    });
    // A closed channel is not a dead node: it keeps forwarding from its last config. The session stays
    // until its heartbeats are overdue (then it is offline and its LBs move), or the node reconnects.
    ws.on('close', () => this.changed());
  }

  /**
   * Addresses, status and per-node convergence of an LB. Its HTTP/HTTPS traffic also passes every L7 node,
   * so with such listeners it is `active` only once the online L7 nodes applied the change too: an LB shown
   * active while an L7 node still lacks its new listener would answer 404 there.
   */
  runtime(lbId: string, configVersion: number): LbRuntime {
    const now = Date.now();
    const compiled = this.compiled.get(lbId);
    const hosting = (this.placement.get(lbId) ?? []).map((id) => this.sessions.get(id)).filter((s) => s !== undefined);
    if ((compiled?.l7.length ?? 0) > 0) for (const s of this.sessions.values()) if (s.kind === 'l7') hosting.push(s);
    const binders = this.serving.get(lbId)?.binders ?? [];
    const view = hosting.map((s) => {
      const error = s.failedLbs.has(lbId) ? failureOf(s, this.sentListenersOf(s, lbId)) : undefined;
      return {
        nodeId: s.nodeId,
        kind: s.kind,
        address: s.address,
        online: this.isOnline(s, now),
        converged: (s.ackedLbVersions.get(lbId) ?? 0) >= configVersion && error === undefined,
        ...(s.kind === 'l4' ? { role: binders.includes(s.nodeId) ? ('active' as const) : ('standby' as const) } : {}),
        ...(error === undefined ? {} : { error }),
      };
    });
    const online = view.filter((n) => n.online);
    return {
      // Active once an online node binds the VIP and every online node applied the LB's current config.
      status:
        online.some((n) => n.kind === 'l4' && n.role === 'active') && online.every((n) => n.converged)
          ? 'active'
          : 'provisioning',
      addresses: compiled?.address ? [compiled.address] : [],
      nodes: view,
    };
  }

  /** Per node, why this listener is not running there (empty when it runs everywhere it should). */
  listenerErrors(listenerId: string): { nodeId: string; reason: string }[] {
    const out: { nodeId: string; reason: string }[] = [];
    for (const s of this.sessions.values()) {
      for (const f of s.failures) if (f.listenerId === listenerId) out.push({ nodeId: s.nodeId, reason: f.reason });
    }
    return out.sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1));
  }

  private sentListenersOf(s: Session, lbId: string): ReadonlySet<string> {
    return new Set(s.sentByLb.get(lbId) ?? []);
  }

  /** Closes a node's session (deleted, or its credential replaced): it is offline from now on. */
  disconnect(nodeId: string, reason: string): void {
    const session = this.sessions.get(nodeId);
    this.rejoining.delete(nodeId);
    if (!session) return;
    this.sessions.delete(nodeId);
    session.ws.close(4001, reason);
    this.log.info({ nodeId, reason }, 'node disconnected');
    this.changed();
  }

  /** Refuses a connection for good: said, logged, closed. */
  private refuse(ws: WebSocket, reason: string): null {
    this.reject(ws, reason);
    ws.close(4003, reason.slice(0, 120));
    return null;
  }

  private reject(ws: WebSocket, reason: string): void {
    this.log.warn({ reason }, 'control message rejected');
    const error: ControllerMessage = { type: 'error', reason };
    ws.send(JSON.stringify(error));
  }

  private open(ws: WebSocket, who: NodeIdentity, hello: HelloMessage, legacy: boolean): Session | null {
    const previous = this.sessions.get(who.nodeId);
    if (previous && previous.ws.readyState === previous.ws.OPEN && this.isOnline(previous, Date.now())) {
      // One credential, one live session: a copy of it (a cloned host, a thief) does not take over a node
      // that is still heartbeating. A node whose old connection went silent is let back in.
      this.log.warn({ nodeId: who.nodeId }, 'second connection for a node that is still connected: refused');
      return this.refuse(ws, 'this node is already connected');
    }
    if (previous) previous.ws.close(4000, 'replaced by a newer connection of the same node');
    if (!touchNodeRow(this.db, who, legacy)) return this.refuse(ws, 'this node is not registered');
    if (legacy) sendLegacyCredential(this.db, ws, who.nodeId, this.log);
    // hello.appliedVersion is not followed: versions start from the clock at each controller start, so any
    // version really issued is below ours, and following a claim (as this once did) let one hello of 2^53-1
    // push every later version past the channel schema, and every node refused every config from then on.
    const session: Session = {
      ws,
      nodeId: who.nodeId,
      kind: who.kind,
      address: who.address,
      sentVersion: null,
      sentJson: new Map(),
      sentL7Nodes: null,
      sentL4Nodes: null,
      sentByLb: new Map(),
      portOwner: new Map(),
      lbVersionsSent: new Map(),
      ackedLbVersions: new Map(),
      failures: [],
      failedLbs: new Set(),
      failuresInLastError: null,
      reusePort: hello.reusePort === true,
      boundVips: new Set(hello.boundVips ?? []),
      lastSeen: Date.now(),
    };
    this.sessions.set(who.nodeId, session);
    this.rejoining.delete(who.nodeId);
    if (who.kind === 'l4') recordVipMode(this.db, who.nodeId, session.reusePort ? 'active-active' : 'active-standby');
    this.log.info(
      { nodeId: who.nodeId, kind: who.kind, address: who.address, appliedVersion: hello.appliedVersion },
      'node connected',
    );
    this.recompile();
    return session;
  }

  private heartbeat(session: Session, reported: NodeLoadReport, failures?: ListenerFailure[]): void {
    recordHeartbeat(this.db, session.nodeId, clampLoad(reported));
    // Binds are retried by the node: each heartbeat says which still fail, so a freed port heals here too.
    if (failures === undefined) return;
    const before = JSON.stringify(session.failures);
    this.setFailures(session, failures);
    // The node's lastError names the listeners an ack said failed: it follows their retries, so a bind that
    // healed is no longer shown there either (a refused config's error is left as it is).
    const version = session.failuresInLastError;
    if (version !== null && JSON.stringify(failures) !== before) {
      recordError(this.db, session.nodeId, failedListenersError(version, failures));
      if (failures.length === 0) session.failuresInLastError = null;
    }
  }

  private setFailures(session: Session, failures: ListenerFailure[]): void {
    session.failures = failures;
    this.observeBinds(session, failures);
    const before = session.failedLbs;
    session.failedLbs = failedLbsOf(session.sentByLb, failures);
    // A VIP its binder cannot bind may be held by another node (see chooseVipBinders): look again.
    const same = before.size === session.failedLbs.size && [...before].every((id) => session.failedLbs.has(id));
    if (!same && session.kind === 'l4') this.changed();
  }

  private ack(session: Session, version: number, failedListeners: ListenerFailure[] = []): void {
    if (!session.lbVersionsSent.has(version)) return; // an ack for something we did not send (or already superseded)
    // The node applied every version up to this one, in order.
    const done = [...session.lbVersionsSent.keys()].filter((v) => v <= version).sort((a, b) => a - b);
    for (const v of done) {
      applyLbVersions(session.ackedLbVersions, session.lbVersionsSent.get(v)!, (full) => {
        session.ackedLbVersions = full;
      });
      session.lbVersionsSent.delete(v);
    }
    this.setFailures(session, failedListeners);
    if (failedListeners.length > 0) {
      this.log.warn(
        { nodeId: session.nodeId, version, failedListeners: failedListeners.slice(0, 20) },
        'node applied a config but not every listener of it',
      );
    }
    session.failuresInLastError = failedListeners.length === 0 ? null : version;
    recordApplied(this.db, session.nodeId, version, failedListenersError(version, failedListeners));
  }

  private nack(session: Session, version: number, reason: string): void {
    this.log.warn({ nodeId: session.nodeId, version, reason }, 'node refused a config');
    this.failed(session, version, reason);
  }

  /** The node did not take `version`: it keeps its last good config, and gets everything anew on the next change. */
  private failed(session: Session, version: number, reason: string): void {
    recordError(this.db, session.nodeId, `version ${version}: ${reason}`);
    session.failuresInLastError = null;
    session.sentVersion = null;
    session.sentJson = new Map();
    session.sentL7Nodes = null;
    session.sentL4Nodes = null;
    session.sentByLb = new Map();
    session.portOwner = new Map();
  }

  /** The L4 nodes as the choice of VIP binders sees them: what they can share, whether they can be told. */
  private vipNodes(): Map<string, VipNode> {
    const out = new Map<string, VipNode>();
    for (const s of this.sessions.values()) {
      if (s.kind !== 'l4') continue;
      out.set(s.nodeId, {
        id: s.nodeId,
        reusePort: s.reusePort,
        channelOpen: s.ws.readyState === s.ws.OPEN,
        bound: s.boundVips,
        serves: (lbId) => s.ackedLbVersions.has(lbId) && !s.failedLbs.has(lbId),
      });
    }
    return out;
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
      .filter((s) => s.kind === 'l4' && this.isOnline(s, now))
      .map((s) => ({ session: s, row: rows.get(s.nodeId) }))
      .filter((n) => n.row !== undefined && !n.row.drain)
      .map((n) => ({
        id: n.session.nodeId,
        capacityWeight: n.row!.capacityWeight,
        activeConnections: n.row!.activeConnections,
      }));
  }

  /** How long the liveness ticker is overdue: this process was too busy to read heartbeats that long. */
  private blindFor(now: number): number {
    const late = now - this.lastTick - LIVENESS_TICK_MS;
    return late > LIVENESS_TICK_MS ? late : 0;
  }

  /** Heard from within the offline threshold, not counting a stall of this process not yet credited. */
  private isOnline(s: Session, now: number): boolean {
    return now - s.lastSeen - this.blindFor(now) <= OFFLINE_AFTER_MS;
  }

  private checkLiveness(): void {
    const now = Date.now();
    // Time this process could not look (its event loop held up, e.g. serialising a fleet-sized config) is
    // not the nodes' silence: their heartbeats are waiting unread. Credit it, or every node would look
    // offline at once after a stall of 3 s, and every LB would move away and back.
    const blind = this.blindFor(now);
    this.lastTick = now;
    if (blind > 0) for (const s of this.sessions.values()) s.lastSeen = Math.min(now, s.lastSeen + blind);
    for (const [id, s] of this.sessions) {
      if (s.ws.readyState === s.ws.CLOSED && now - s.lastSeen > OFFLINE_AFTER_MS) this.sessions.delete(id);
    }
    const online = new Set(this.onlineL4().map((n) => n.id));
    const same = online.size === this.lastOnlineL4.size && [...online].every((id) => this.lastOnlineL4.has(id));
    if (!same) this.changed();
  }

  /** A health report changed a listener's backends: its LB must be compiled again. */
  healthChanged(listenerId: string): void {
    const row = this.db
      .select({ lb: listenerTable.loadBalancerId })
      .from(listenerTable)
      .where(eq(listenerTable.id, listenerId))
      .get();
    if (row) this.dirty.add(row.lb);
    this.changed(row?.lb);
  }

  /**
   * Compiles what changed since the last call; LBs whose version and health are unchanged are reused.
   * Returns the LBs compiled again, and whether the change can reach beyond them (LBs added or removed, an
   * LB's VIP or L4 ports changed, which can move a port collision to another LB): then every
   * node gets a full diff instead of one limited to the changed LBs.
   */
  private refreshCompiled(): { changed: string[]; beyond: boolean } {
    const scope = this.scanAll ? null : [...new Set([...this.touched, ...this.dirty])];
    this.scanAll = false;
    this.touched.clear();
    return (scope && this.refreshScoped(scope)) ?? this.refreshAll();
  }

  /**
   * Re-reads only the named LBs. Gives up (undefined: read everything) when the fleet's shape may have
   * changed: an LB created or deleted.
   */
  private refreshScoped(scope: string[]): { changed: string[]; beyond: boolean } | undefined {
    const rows = lbsByIds(this.db, scope);
    const known = new Set(this.lbs.map((lb) => lb.id));
    if (scope.some((id) => rows.has(id) !== known.has(id))) return undefined;
    let beyond = false;
    this.lbs = this.lbs.map((lb) => {
      const row = rows.get(lb.id);
      if (row === undefined) return lb;
      if (row.mode !== lb.mode || row.nodeCount !== lb.nodeCount) beyond = true;
      return row;
    });
    for (const id of scope) this.dirty.delete(id);
    for (const [id, lb] of compileLbs(this.db, scope, this.openKey)) {
      const old = this.compiled.get(id);
      if (!old || l4PortKeys(old) !== l4PortKeys(lb)) beyond = true;
      this.compiled.set(id, lb);
    }
    return { changed: scope, beyond };
  }

  private refreshAll(): { changed: string[]; beyond: boolean } {
    const before = this.lbs;
    this.lbs = listLbs(this.db);
    const live = new Set(this.lbs.map((lb) => lb.id));
    for (const id of this.compiled.keys()) if (!live.has(id)) this.compiled.delete(id);
    let beyond =
      before.length !== this.lbs.length ||
      this.lbs.some(
        (lb, i) => before[i]?.id !== lb.id || before[i]?.mode !== lb.mode || before[i]?.nodeCount !== lb.nodeCount,
      );
    const stale = this.lbs
      .filter((lb) => {
        const cached = this.compiled.get(lb.id);
        return !cached || cached.configVersion !== lb.configVersion || this.dirty.has(lb.id);
      })
      .map((lb) => lb.id);
    this.dirty.clear();
    for (const [id, lb] of compileLbs(this.db, stale, this.openKey)) {
      const old = this.compiled.get(id);
      if (!old || l4PortKeys(old) !== l4PortKeys(lb)) beyond = true;
      this.compiled.set(id, lb);
    }
    return { changed: stale, beyond };
  }

  private recompile(): void {
    // Nothing to push to: compile lazily when the first node says hello.
    if (this.sessions.size === 0) {
      this.servingDirty = true;
      this.observeServing();
      return;
    }
    const { changed, beyond } = this.refreshCompiled();
    const online = this.onlineL4();
    const onlineIds = new Set(online.map((n) => n.id));
    const lost = [...this.lastOnlineL4].filter((id) => !onlineIds.has(id)).length;
    const previousPlacement = this.placement;
    if (this.lastOnlineL4.size >= 2 && lost / this.lastOnlineL4.size > CIRCUIT_BREAKER_SHARE) {
      // Circuit breaker: keep the placement; the nodes most likely still serve, we just cannot see them.
      this.log.warn({ lost, of: this.lastOnlineL4.size }, 'most L4 nodes vanished at once: placement frozen');
    } else {
      this.placement = place(this.lbs, online, this.placement);
      this.lastOnlineL4 = onlineIds;
    }
    const previousServing = this.serving;
    this.serving = chooseVipBinders(
      this.placement,
      this.vipNodes(),
      previousServing,
      (id) => this.compiled.get(id)?.address ?? null,
    );
    const fullDiff =
      beyond || !samePlacement(previousPlacement, this.placement) || !sameServing(previousServing, this.serving);
    const l7Pool = [
      ...[...this.sessions.values()]
        .filter((s) => s.kind === 'l7' && this.isOnline(s, Date.now()))
        .map((s) => ({ nodeId: s.nodeId, address: s.address })),
      ...[...this.rejoining].map(([nodeId, address]) => ({ nodeId, address })),
    ]
      .map((n) => ({ ...n, port: L7_PORT_BASE, healthy: true }))
      .sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1));
    const l7Json = JSON.stringify(l7Pool);
    this.l4Addresses = l4NodeAddresses(this.db);
    const l4Json = JSON.stringify(this.l4Addresses);
    for (const session of this.sessions.values()) {
      if (session.ws.readyState !== session.ws.OPEN) continue;
      // Deltas carry listeners only: a changed L4 fleet reaches an L7 node as a whole new snapshot (rare).
      if (session.kind === 'l7' && session.sentL4Nodes !== l4Json) this.resendSnapshot(session);
      // A write touches one LB of thousands: diff only that LB for each node (what made fleet-wide diffs
      // per write cost tens of ms at 1,000 LBs), unless the change can reach other LBs.
      const onlyChanged =
        !fullDiff && session.sentVersion !== null && (session.kind === 'l7' || session.sentL7Nodes === l7Json);
      if (onlyChanged) this.pushChanged(session, changed);
      else if (session.kind === 'l4') this.pushL4(session, l7Pool);
      else this.pushL7(session);
    }
    if (fullDiff || l7Json !== this.observedL7Pool) this.servingDirty = true;
    this.observedL7Pool = l7Json;
    for (const id of changed) {
      const l7 = (this.compiled.get(id)?.l7.length ?? 0) > 0;
      if (l7 !== this.l7Lbs.has(id)) this.servingDirty = true;
      if (l7) this.l7Lbs.add(id);
      else this.l7Lbs.delete(id);
    }
    this.observeServing();
  }

  /**
   * Records nodes that began or stopped serving an LB (`node` events): the L4 nodes its placement names, and
   * every online L7 node for an LB with HTTP/HTTPS listeners. Looks only when something that decides it moved.
   */
  private observeServing(): void {
    if (!this.events || this.closed || !this.servingDirty) return;
    this.servingDirty = false;
    const now = Date.now();
    const view = new Map<string, ServingNode & { lbs: Set<string> }>();
    for (const s of this.sessions.values()) {
      if (s.kind === 'l7' && !this.isOnline(s, now)) continue;
      view.set(s.nodeId, { kind: s.kind, address: s.address, lbs: new Set() });
    }
    for (const [lbId, nodeIds] of this.placement) {
      for (const id of nodeIds) if (this.sessions.get(id)?.kind === 'l4') view.get(id)?.lbs.add(lbId);
    }
    for (const node of view.values()) {
      if (node.kind !== 'l7') continue;
      for (const lb of this.lbs) if ((this.compiled.get(lb.id)?.l7.length ?? 0) > 0) node.lbs.add(lb.id);
    }
    const { changes, retryAt } = this.servingLog.observe(view, now);
    for (const c of changes) this.events.record(servingEvent(c));
    if (retryAt !== null && this.servingTimer === null) {
      this.servingTimer = setTimeout(
        () => {
          this.servingTimer = null;
          this.servingDirty = true;
          this.observeServing();
        },
        Math.max(0, retryAt - now),
      );
      this.servingTimer.unref();
    }
  }

  /** Records the listeners this node newly cannot bind, and those it binds again (`bind` events). */
  private observeBinds(session: Session, failures: ListenerFailure[]): void {
    if (!this.events) return;
    // Every heartbeat repeats the failures: the same ones cost a lookup per failure, nothing more.
    const before = this.binds.get(session.nodeId);
    if ((before?.size ?? 0) === failures.length && failures.every((f) => before?.has(f.listenerId))) return;
    let lbOf: Map<string, string> | null = null;
    const lbOfListener = (listenerId: string) => {
      if (lbOf === null) {
        lbOf = new Map();
        for (const [lbId, ids] of session.sentByLb) for (const id of ids) lbOf.set(id, lbId);
      }
      return lbOf.get(listenerId);
    };
    const label = (lbId: string, listenerId: string) => {
      const lb = this.compiled.get(lbId);
      const config = (lb?.l4.find((l) => l.config.id === listenerId) ?? lb?.l7.find((l) => l.config.id === listenerId))
        ?.config as { protocol?: string; port?: number } | undefined;
      return config ? `${config.protocol}:${config.port}` : null;
    };
    const { state, events } = bindEvents(before ?? new Map(), failures, {
      nodeId: session.nodeId,
      lbOf: lbOfListener,
      label,
      // A listener deleted since is not "bound again": it is gone.
      exists: (lbId, id) => label(lbId, id) !== null,
    });
    if (state.size === 0) this.binds.delete(session.nodeId);
    else this.binds.set(session.nodeId, state);
    for (const e of events) this.events.record(e);
  }

  /** The node's next config goes out as a full snapshot; versions in flight are still acked as before. */
  private resendSnapshot(session: Session): void {
    session.sentVersion = null;
    session.sentJson = new Map();
    session.sentByLb = new Map();
  }

  private pushL4(session: Session, l7Pool: NodeSnapshot['l7Nodes']): void {
    const lbVersions = new Map<string, number>();
    const wanted: Wanted[] = [];
    const byLb = new Map<string, string[]>();
    const owner = new Map<string, string>();
    for (const lb of this.lbs) {
      if (!(this.placement.get(lb.id) ?? []).includes(session.nodeId)) continue;
      const compiled = this.compiled.get(lb.id);
      if (!compiled) continue;
      lbVersions.set(lb.id, compiled.configVersion);
      const ids: string[] = [];
      // A standby hosts the LB without its listeners: converged once it acks, ready to take the VIP over.
      const serving = this.serving.get(lb.id);
      const binds = serving?.binders.includes(session.nodeId) ?? false;
      for (const { config, json } of binds ? compiled.l4 : []) {
        // LBs on their own VIPs never meet; an LB without one (none left in its pools) shares the node's.
        const key = l4PortKey(config, compiled.address ?? session.address);
        if (owner.has(key)) {
          this.log.warn(
            { nodeId: session.nodeId, listenerId: config.id, port: config.port },
            'port already served on this node',
          );
          lbVersions.set(lb.id, -1);
          continue;
        }
        owner.set(key, lb.id);
        ids.push(config.id);
        wanted.push(this.l4Wanted(session, compiled, serving!, config, json));
      }
      byLb.set(lb.id, ids);
    }
    session.portOwner = owner;
    this.pushAll(session, wanted, byLb, lbVersions, l7Pool);
  }

  private pushL7(session: Session): void {
    const lbVersions = new Map<string, number>();
    const wanted: Wanted[] = [];
    const byLb = new Map<string, string[]>();
    for (const lb of this.lbs) {
      const compiled = this.compiled.get(lb.id);
      if (!compiled) continue;
      lbVersions.set(lb.id, compiled.configVersion);
      byLb.set(
        lb.id,
        compiled.l7.map((l) => l.config.id),
      );
      for (const { config, json } of compiled.l7) wanted.push(this.l7Wanted(session, config, json));
    }
    this.pushAll(session, wanted, byLb, lbVersions);
  }

  private l4Wanted(
    session: Session,
    lb: CompiledLb,
    serving: VipServing,
    config: L4ListenerConfig,
    json: string,
  ): Wanted {
    const shared = serving.mode === 'active-active';
    return {
      id: config.id,
      // The mode is part of what was sent: a node that now shares the VIP must rebind with SO_REUSEPORT.
      json: shared ? `${json}|shared` : json,
      build: () => ({
        ...config,
        bindAddresses: [lb.address ?? session.address],
        ...(shared ? { reusePort: true } : {}),
      }),
    };
  }

  private l7Wanted(session: Session, config: L7ListenerConfig, json: string): Wanted {
    return { id: config.id, json, build: () => ({ ...config, bindAddress: session.address }) };
  }

  /** Diffs the node's whole config against what it was sent. */
  private pushAll(
    session: Session,
    wanted: Wanted[],
    byLb: Map<string, string[]>,
    lbVersions: Map<string, number>,
    l7Pool?: NodeSnapshot['l7Nodes'],
  ): void {
    const first = session.sentVersion === null;
    const upsert = first ? wanted : wanted.filter((w) => session.sentJson.get(w.id) !== w.json);
    const wantedIds = new Set(wanted.map((w) => w.id));
    const remove = first ? [] : [...session.sentJson.keys()].filter((id) => !wantedIds.has(id));
    session.sentByLb = byLb;
    this.deliver(session, upsert, remove, { full: true, versions: lbVersions }, l7Pool);
  }

  /**
   * Diffs only the given LBs, when nothing else can have moved (same placement, LBs, ports and L7 pool):
   * the cost of a write is then that of its LB, not of the fleet.
   */
  private pushChanged(session: Session, lbIds: string[]): void {
    const upsert: Wanted[] = [];
    const remove: string[] = [];
    // Only the changed LBs' versions: copying every LB's per write was the largest cost left at 1,000 LBs.
    const lbVersions = new Map<string, number>();
    for (const lbId of lbIds) {
      const compiled = this.compiled.get(lbId);
      const ids: string[] = [];
      if (compiled && session.kind === 'l4') {
        if (!(this.placement.get(lbId) ?? []).includes(session.nodeId)) continue;
        lbVersions.set(lbId, compiled.configVersion);
        const serving = this.serving.get(lbId);
        const binds = serving?.binders.includes(session.nodeId) ?? false;
        for (const { config, json } of binds ? compiled.l4 : []) {
          if (session.portOwner.get(l4PortKey(config, compiled.address ?? session.address)) !== lbId) {
            lbVersions.set(lbId, -1);
            continue;
          }
          ids.push(config.id);
          const wanted = this.l4Wanted(session, compiled, serving!, config, json);
          if (session.sentJson.get(config.id) !== wanted.json) upsert.push(wanted);
        }
      } else if (compiled) {
        lbVersions.set(lbId, compiled.configVersion);
        for (const { config, json } of compiled.l7) {
          ids.push(config.id);
          if (session.sentJson.get(config.id) !== json) upsert.push(this.l7Wanted(session, config, json));
        }
      }
      const kept = new Set(ids);
      for (const id of session.sentByLb.get(lbId) ?? []) if (!kept.has(id)) remove.push(id);
      session.sentByLb.set(lbId, ids);
    }
    this.deliver(session, upsert, remove, { full: false, versions: lbVersions });
  }

  /** Sends a delta (or the first snapshot) and records what the node will have once it acks it. */
  private deliver(
    session: Session,
    upsert: Wanted[],
    remove: string[],
    lbVersions: LbVersions,
    l7Pool?: NodeSnapshot['l7Nodes'],
  ): void {
    const first = session.sentVersion === null;
    const l7Json = l7Pool === undefined ? null : JSON.stringify(l7Pool);
    const l7Changed = l7Json !== null && l7Json !== session.sentL7Nodes;
    if (!first && upsert.length === 0 && remove.length === 0 && !l7Changed) {
      // Nothing for the node to do. Its config, once it acks what is in flight, is the current one: the
      // newest pending version (or the node's current one) carries these LB versions.
      const pending = [...session.lbVersionsSent.keys()];
      if (pending.length === 0) {
        applyLbVersions(session.ackedLbVersions, lbVersions, (full) => {
          session.ackedLbVersions = full;
        });
      } else {
        const newest = Math.max(...pending);
        const entry = session.lbVersionsSent.get(newest)!;
        if (lbVersions.full) session.lbVersionsSent.set(newest, lbVersions);
        else for (const [id, v] of lbVersions.versions) entry.versions.set(id, v);
      }
      return;
    }
    upsert.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const version = ++this.version;
    const generatedAt = new Date().toISOString();
    const upserted = upsert.map((w) => w.build());
    let message: ControllerMessage;
    if (first) {
      message =
        session.kind === 'l4'
          ? {
              type: 'snapshot',
              kind: 'l4',
              snapshot: {
                version,
                generatedAt,
                listeners: upserted,
                l7Nodes: l7Pool ?? [],
                backendDeny: this.backendDeny(),
                ...(this.sessionSyncPrefix ? { sessionSyncPrefix: this.sessionSyncPrefix } : {}),
              } as NodeSnapshot,
            }
          : {
              type: 'snapshot',
              kind: 'l7',
              snapshot: {
                version,
                generatedAt,
                listeners: upserted,
                l4Nodes: this.l4Addresses,
                backendDeny: this.backendDeny(),
                ...(this.sessionSyncPrefix ? { sessionSyncPrefix: this.sessionSyncPrefix } : {}),
              } as L7NodeSnapshot,
            };
    } else if (session.kind === 'l4') {
      message = {
        type: 'delta',
        kind: 'l4',
        fromVersion: session.sentVersion!,
        version,
        generatedAt,
        upsert: upserted as NodeSnapshot['listeners'],
        remove,
        ...(l7Changed ? { l7Nodes: l7Pool } : {}),
      };
    } else {
      message = {
        type: 'delta',
        kind: 'l7',
        fromVersion: session.sentVersion!,
        version,
        generatedAt,
        upsert: upserted as L7NodeSnapshot['listeners'],
        remove,
      };
    }
    const text = JSON.stringify(message);
    const bytes = Buffer.byteLength(text);
    if (bytes > this.maxMessageBytes) {
      // The node would drop the connection on it, reconnect and be sent it again, forever, each time costing
      // us a full compile and serialisation: refuse it here, once per change, and say why.
      const reason = `config of ${bytes} bytes exceeds the control channel limit of ${this.maxMessageBytes} bytes`;
      this.log.error({ nodeId: session.nodeId, version, bytes }, 'config too large for the control channel');
      this.failed(session, version, reason);
      const error: ControllerMessage = { type: 'error', reason };
      session.ws.send(JSON.stringify(error));
      return;
    }
    session.sentVersion = version;
    for (const id of remove) session.sentJson.delete(id);
    for (const w of upsert) session.sentJson.set(w.id, w.json);
    if (l7Json !== null) session.sentL7Nodes = l7Json;
    if (first && session.kind === 'l7') session.sentL4Nodes = JSON.stringify(this.l4Addresses);
    session.lbVersionsSent.set(version, lbVersions);
    session.ws.send(text);
  }
}

type Wanted = { id: string; json: string; build: () => unknown };

/** LB config versions a config carries: every LB on the node (`full`), or only those a delta changed. */
interface LbVersions {
  full: boolean;
  versions: Map<string, number>;
}

/** The LBs a node's failed listeners belong to, from what it was sent. */
/** A node's lastError for listeners it could not build or bind with `version` (null: none). */
function failedListenersError(version: number, failed: ListenerFailure[]): string | null {
  if (failed.length === 0) return null;
  const named = failed
    .slice(0, 5)
    .map((f) => `${f.listenerId}: ${f.reason}`)
    .join('; ');
  return `version ${version}: ${failed.length} listener(s) not applied: ${named}`.slice(0, 2000);
}

function failedLbsOf(sentByLb: Map<string, string[]>, failed: ListenerFailure[]): Set<string> {
  const lbs = new Set<string>();
  if (failed.length === 0) return lbs;
  const ids = new Set(failed.map((f) => f.listenerId));
  for (const [lbId, listenerIds] of sentByLb) if (listenerIds.some((id) => ids.has(id))) lbs.add(lbId);
  return lbs;
}

/** The first failure among these listeners, as `listenerId: reason`. */
function failureOf(session: Session, listenerIds: ReadonlySet<string>): string | undefined {
  const f = session.failures.find((x) => listenerIds.has(x.listenerId));
  return f === undefined ? undefined : `${f.listenerId}: ${f.reason}`;
}

function applyLbVersions(acked: Map<string, number>, update: LbVersions, replace: (m: Map<string, number>) => void) {
  if (update.full) replace(update.versions);
  else for (const [id, v] of update.versions) acked.set(id, v);
}

/** An L4 listener's claim on an address of its node: transport, address and port. */
function l4PortKey(config: L4ListenerConfig, address: string): string {
  return `${config.protocol === 'udp' ? 'udp' : 'tcp'}/${address}/${config.port}`;
}

function l4PortKeys(lb: CompiledLb): string {
  return `${lb.address}:${lb.l4.map((l) => l4PortKey(l.config, '')).join(',')}`;
}

function samePlacement(a: ReadonlyMap<string, string[]>, b: ReadonlyMap<string, string[]>): boolean {
  if (a.size !== b.size) return false;
  for (const [id, nodes] of a) {
    const other = b.get(id);
    if (other === undefined || other.length !== nodes.length || other.some((n, i) => n !== nodes[i])) return false;
  }
  return true;
}

function servingEvent(c: ServingChange) {
  const node = `${c.kind.toUpperCase()} node ${c.nodeId} (${c.address})`;
  return {
    loadBalancerId: c.lbId,
    kind: 'node' as const,
    summary: c.joined ? `${node} began serving` : `${node} stopped serving`,
    resourceId: c.nodeId,
    detail: { nodeId: c.nodeId, nodeKind: c.kind, address: c.address, change: c.joined ? 'joined' : 'left' },
  };
}
