import type { Store } from '@slb/db';
import {
  CONTROL_CHANNEL_MAX_BYTES,
  type ControllerMessage,
  type HelloMessage,
  L7_PORT_BASE,
  type NodeMessage,
  type SnapshotBackendDeny,
  type TrafficReport,
} from '@slb/model';
import type { FastifyBaseLogger } from 'fastify';
import type WebSocket from 'ws';
import type { EventSink } from '../events/store.js';
import { OFFLINE_AFTER_MS } from '../services/nodes.js';
import { type Clock, systemClock, type Timer } from './clock.js';
import { CompileCache, type ControlWork } from './compile-cache.js';
import { ConfigDelivery, type Fleet } from './config-delivery.js';
import { type Elsewhere, FleetPlacement, NOTHING_ELSEWHERE } from './fleet-placement.js';
import { l4NodeAddresses } from './l7-trust.js';
import { type LbRuntime, type NodePart, runtimeOf, runtimeParts } from './lb-runtime.js';
import type { NodeIdentity } from './node-credentials.js';
import { NodeLiveness } from './node-liveness.js';
import { parseNodeMessage } from './node-messages.js';
import { lastKnownNodes, NodeRejoin, REJOIN_GRACE_MS } from './node-rejoin.js';
import {
  helloIdentity,
  type PlacementRow,
  placementRows,
  recordVipMode,
  sendLegacyCredential,
  touchNodeRow,
} from './node-rows.js';
import {
  type LbsTouched,
  newSession,
  resendSnapshot,
  resumable,
  resumeFrom,
  type Session,
  vipNodeOf,
} from './node-session.js';
import { PlacementStore, storedPlacement } from './placement-rows.js';
import { ServingRecorder } from './serving-events.js';
import { SessionReports } from './session-reports.js';
import type { Rival } from './vip-serving.js';

export type { LbRuntime, NodePart } from './lb-runtime.js';
export { REJOIN_GRACE_MS } from './node-rejoin.js';

/** How often replicas read the whole fleet again, for another replica's write whose signal was lost. */
export const FLEET_RESCAN_MS = 30_000;

/** More LBs than this moved by one recompile (a node come or gone): every node gets a full diff. */
const MOVED_FOR_FULL_DIFF = 32;

export interface ControlHubOptions {
  /**
   * How long after a start the nodes the previous controller saw online have to reconnect: L7 nodes stay in
   * the L7 pool, L4 nodes keep their LBs, until then; default {@link REJOIN_GRACE_MS}.
   */
  rejoinGraceMs?: number;
  /** Largest message sent to a node; default (and what nodes accept) {@link CONTROL_CHANNEL_MAX_BYTES}. */
  maxMessageBytes?: number;
  /** Decrypts a stored private key for the L7 nodes (SecretBox.open); default: stored in clear (tests). */
  openKey?: (stored: string) => string;
  /** Where nodes joining and leaving LBs, and their bind failures, are recorded; default: nowhere. */
  events?: EventSink;
  /** A flapping node's joins and leaves are recorded at most once per this many ms (see ServingLog); default 30,000. */
  nodeEventIntervalMs?: number;
  /**
   * Other API replicas (PostgreSQL) may hold nodes: the first node to connect here brings the fleet's other
   * nodes that heartbeat elsewhere into the rejoin grace (see adoptFleet). Default false.
   */
  sharedFleet?: boolean;
  /**
   * The hub's time: liveness, the rejoin grace, coalesced recompiles, held-back events; default the real one.
   * Stored timestamps (a node's lastHeartbeatAt) stay on wall time, which GET /v1/nodes compares with.
   */
  clock?: Clock;
}

/** What the previous controller left in the database, read before the hub starts. */
interface Remembered {
  placement: Map<string, string[]>;
  l7: Map<string, string>;
  l4: Map<string, string>;
}

/**
 * The controller side of the control channel: holds one session per node, compiles the fleet's config
 * on every change (CompileCache), places load balancers and chooses their VIP binders, and pushes each
 * node its deltas (ConfigDelivery), tracking acks for convergence. Its reads and writes are async (the
 * store, on SQLite or PostgreSQL): one recompile runs at a time, and changes that arrive meanwhile are
 * compiled by the next.
 */
export class ControlHub {
  private readonly sessions = new Map<string, Session>();
  private readonly fleet: FleetPlacement;
  private readonly placements: PlacementStore;
  private readonly cache: CompileCache;
  private readonly delivery: ConfigDelivery;
  private readonly liveness: NodeLiveness;
  /** L7 nodes the previous controller saw online, not back yet. */
  private rejoin: NodeRejoin;
  /** L4 nodes the previous controller saw online, not back yet. */
  private l4Rejoin: NodeRejoin;
  private readonly graceMs: number;
  /** Other API replicas may hold the fleet's nodes (see adoptFleet). */
  private readonly sharedFleet: boolean;
  private adopting: Promise<void> | null = null;
  private readonly recorder: ServingRecorder | null;
  private readonly clock: Clock;
  /** A recompile is deferred (changed()) but not started yet. */
  private pending = false;
  /** The running recompile; `again`: changes arrived while it read, so it runs once more. */
  private compiling: Promise<void> | null = null;
  private again = false;
  /** Work started and not finished: hellos, recompiles, health lookups (settled() waits for them). */
  private readonly inflight = new Set<Promise<unknown>>();
  /** The nodes' rows placement reads (capacity, load, drain), as of the last recompile. */
  private nodeRows = new Map<string, PlacementRow>();
  /** The backend deny set the snapshots carry, as last read; `readDeny` reads it anew. */
  private deny: SnapshotBackendDeny[] = [];
  private readDeny: () => Promise<SnapshotBackendDeny[]> = async () => [];
  /** The L7 pool of the last recompile (JSON), which the liveness tick compares the current one with. */
  private compiledL7Pool = '';
  private closed = false;
  private rescan: Timer | null = null;
  private readonly reports: SessionReports;
  /** LBs compiled and diffed since the start (see ControlWork). */
  readonly work: ControlWork = { lbsCompiled: 0, lbsDiffed: 0 };
  /**
   * Moves whenever what runtimeParts answers may have changed (a push, an ack, a node come, gone, silent or
   * heard again): RuntimeShare publishes this replica's parts again then.
   */
  runtimeGeneration = 0;
  /** The LBs whose parts may have changed since RuntimeShare last took them ('all': any). */
  private runtimeTouched: Set<string> | 'all' = 'all';
  /** The sessions online at the last liveness tick, to tell when that moved. */
  private onlineSignature = '';
  /** The VIP binders and spread LBs' hosts other API replicas chose among their own nodes, by LB. */
  private elsewhere: Elsewhere = NOTHING_ELSEWHERE;

  /** A hub that starts from where the previous controller left the LBs and the nodes it saw. */
  static async start(
    store: Store,
    log: FastifyBaseLogger,
    now = Date.now(),
    options: ControlHubOptions = {},
  ): Promise<ControlHub> {
    const remembered = {
      placement: await storedPlacement(store),
      l7: await lastKnownNodes(store, 'l7', OFFLINE_AFTER_MS),
      l4: await lastKnownNodes(store, 'l4', OFFLINE_AFTER_MS),
    };
    return new ControlHub(store, log, now, options, remembered);
  }

  private constructor(
    private readonly store: Store,
    private readonly log: FastifyBaseLogger,
    now: number,
    options: ControlHubOptions,
    remembered: Remembered,
  ) {
    this.clock = options.clock ?? systemClock;
    this.fleet = new FleetPlacement(log, remembered.placement);
    this.placements = new PlacementStore(store);
    this.cache = new CompileCache(store, options.openKey ?? ((stored) => stored), this.work);
    this.delivery = new ConfigDelivery({
      log,
      // Versions outlive a controller restart: they start from the clock and only grow.
      startVersion: now,
      maxMessageBytes: options.maxMessageBytes ?? CONTROL_CHANNEL_MAX_BYTES,
      tooLarge: (session, version, reason) => this.reports.failed(session, version, reason),
      now: () => this.clock.now(),
      work: this.work,
    });
    this.recorder = options.events
      ? new ServingRecorder(options.events, this.clock, options.nodeEventIntervalMs, () => ({
          sessions: this.sessions.values(),
          sessionOf: (id) => this.sessions.get(id),
          isOnline: (s, at) => this.liveness.isOnline(s, at),
          placement: this.fleet.placement,
          lbs: this.cache.lbs,
          compiled: this.cache.all,
        }))
      : null;
    this.delivery.backendDeny = () => this.deny;
    this.reports = new SessionReports({
      store,
      log,
      recorder: this.recorder,
      failedLbsMoved: () => this.changed(),
      runtimeMoved: (lbs) => this.runtimeMoved(lbs),
    });
    this.liveness = new NodeLiveness(this.clock, OFFLINE_AFTER_MS, () => this.checkLiveness());
    this.graceMs = options.rejoinGraceMs ?? REJOIN_GRACE_MS;
    this.sharedFleet = options.sharedFleet ?? false;
    this.rejoin = this.awaitRejoin('l7', remembered.l7);
    this.l4Rejoin = this.awaitRejoin('l4', remembered.l4);
  }

  private awaitRejoin(kind: 'l4' | 'l7', nodes: Map<string, string>): NodeRejoin {
    return new NodeRejoin(nodes, this.clock, this.graceMs, (late) => {
      if (kind === 'l7') this.log.warn({ nodes: late }, 'L7 nodes did not reconnect: out of the L7 pool');
      else this.log.warn({ nodes: late }, 'L4 nodes did not reconnect: their load balancers are placed again');
      this.changed();
    });
  }

  /**
   * The first node to connect to a replica holding none: the fleet is most likely coming over from a replica
   * that died, and the nodes heartbeating there until moments ago are held in their place as after a restart
   * (NodeRejoin). Without it, an L4 node that arrived before the L7 nodes was sent an L7 pool without them, and
   * refused HTTP connections until they came (the chaos run's replica kill saw it), and the first L4 node took
   * every VIP.
   */
  private async adoptFleet(): Promise<void> {
    const since = Date.now() - OFFLINE_AFTER_MS;
    const [l7, l4] = await Promise.all([
      lastKnownNodes(this.store, 'l7', OFFLINE_AFTER_MS, since),
      lastKnownNodes(this.store, 'l4', OFFLINE_AFTER_MS, since),
    ]);
    if (this.closed) return;
    // Added to those still awaited since this hub's start (a restart's), which stay awaited.
    const away = (waiting: NodeRejoin, nodes: Map<string, string>) =>
      new Map([...waiting.entries(), ...nodes].filter(([id]) => !this.sessions.has(id)));
    const [rejoin, l4Rejoin] = [away(this.rejoin, l7), away(this.l4Rejoin, l4)];
    this.rejoin.stop();
    this.l4Rejoin.stop();
    this.rejoin = this.awaitRejoin('l7', rejoin);
    this.l4Rejoin = this.awaitRejoin('l4', l4Rejoin);
  }

  /** Where snapshots get the backend deny set from: the API's policy (its own endpoints and the nodes'). */
  setBackendDeny(read: () => Promise<SnapshotBackendDeny[]>): void {
    this.readDeny = read;
  }

  /** Where the heartbeats' traffic summaries go (the API's TrafficIngest); absent: dropped. */
  setTrafficSink(sink: (nodeId: string, report: TrafficReport) => void): void {
    this.reports.trafficSink = sink;
  }

  /** The deployment's session-sync prefix, sent in every first snapshot (the nodes' default namespace). */
  setSessionSyncPrefix(prefix: string): void {
    this.delivery.sessionSyncPrefix = prefix;
  }

  /**
   * Stops for good. The sessions' sockets close after this returns (and their nodes may still send a last
   * heartbeat): nothing they trigger may touch the database, which the app closes once settled() resolves.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.rescan?.cancel();
    this.liveness.stop();
    this.rejoin.stop();
    this.l4Rejoin.stop();
    this.recorder?.stop();
    for (const s of this.sessions.values()) s.ws.close(1001, 'controller shutting down');
  }

  /**
   * Something in the database changed: recompile once the current burst of writes is done. A write names the
   * LB it changed, so only that LB's rows are read again; without a name the whole fleet is.
   */
  changed(lbId?: string): void {
    if (this.closed) return;
    this.cache.touch(lbId);
    this.replan();
  }

  /**
   * Other replicas' VIP binders or spread LBs' hosts changed: where LBs run and who binds their VIPs here is
   * chosen again (nothing is read again).
   */
  setElsewhere(elsewhere: Elsewhere): void {
    this.elsewhere = elsewhere;
    this.replan();
  }

  /** Places and pushes once the current burst of changes is done. */
  private replan(): void {
    if (this.closed || this.pending) return;
    this.pending = true;
    this.clock.defer(() => {
      this.pending = false;
      if (!this.closed) this.recompileSoon();
    });
  }

  /**
   * Reads the whole fleet again every `ms` (another replica's writes, when their signal was lost): only LBs
   * whose configVersion moved are compiled, and nodes are sent only what changed.
   */
  rescanEvery(ms: number): void {
    this.rescan?.cancel();
    this.rescan = this.clock.setInterval(() => this.changed(), ms);
  }

  /** A health report changed a listener's backends: its LB must be compiled again. */
  healthChanged(listenerId: string): void {
    this.track(this.cache.healthChanged(listenerId).then((lb) => this.changed(lb)));
  }

  /**
   * Resolves once nothing the hub started is still running: hellos taken in, recompiles, the nodes' rows
   * written. A recompile deferred (changed()) but not started yet is not waited for: see `busy`.
   */
  async settled(): Promise<void> {
    do {
      await Promise.allSettled([...this.inflight]);
      await this.reports.written();
    } while (this.inflight.size > 0);
  }

  /** A recompile is asked for or running, or other work the hub started is. */
  get busy(): boolean {
    return this.pending || this.inflight.size > 0;
  }

  /** Runs `work` in the background: logged if it fails, waited for by settled(). */
  private track(work: Promise<unknown>): void {
    const running = work.catch((err: unknown) => {
      if (!this.closed) this.log.error({ err }, 'control hub work failed');
    });
    this.inflight.add(running);
    void running.finally(() => this.inflight.delete(running));
  }

  /** Recompiles now, or right after the recompile that is running (it may have read before the change). */
  private recompileSoon(): void {
    if (this.compiling) {
      this.again = true;
      return;
    }
    const run = async () => {
      try {
        do {
          this.again = false;
          try {
            await this.recompile();
          } catch (err) {
            if (!this.closed) this.log.error({ err }, 'config compile failed');
          }
        } while (this.again && !this.closed);
      } finally {
        this.compiling = null;
      }
    };
    this.compiling = run();
    this.track(this.compiling);
  }

  /**
   * A node's connection, authenticated as `identity` (from its credential); without one it joined with the
   * legacy shared token, and its hello says who it is (only for a node without a credential of its own).
   */
  attach(ws: WebSocket, identity?: NodeIdentity): void {
    let session: Session | null = null;
    /** The hello being taken in (it reads and writes the node's row): what the node says next waits for it. */
    let hello: Promise<void> | null = null;
    const take = (message: NodeMessage | { invalid: string }) => {
      if (this.closed) return;
      // A session replaced or revoked: whatever it still says is not heard.
      if (session && this.sessions.get(session.nodeId) !== session) return;
      if ('invalid' in message) return this.reject(ws, message.invalid);
      if (message.type === 'hello') {
        if (session || hello) return this.reject(ws, 'hello was already said');
        const taking = this.hello(ws, message, identity).then(
          (opened) => {
            session = opened;
          },
          (err: unknown) => {
            if (this.closed) return;
            // The database could not be reached: the node retries, with the config it holds meanwhile.
            this.log.error({ err }, 'hello not taken in');
            ws.close(1011, 'the controller could not take the hello in');
          },
        );
        hello = taking.finally(() => {
          hello = null;
        });
        this.track(hello);
        return;
      }
      if (!session) return this.reject(ws, 'say hello first');
      session.lastSeen = this.clock.now();
      if (message.type === 'heartbeat') {
        session.applying = message.applying ?? null;
        this.reports.heartbeat(session, message.load, message.failedListeners, message.failedListenersOmitted);
        if (message.traffic !== undefined) this.reports.traffic(session, message.traffic);
      } else {
        if (session.applying !== null && message.version >= session.applying) session.applying = null;
        if (message.type === 'ack') {
          this.reports.ack(session, message.version, message.failedListeners, message.failedListenersOmitted);
        } else this.reports.nack(session, message.version, message.reason);
      }
    };
    ws.on('message', (data, isBinary) => {
      if (this.closed) return;
      const message = parseNodeMessage(data, isBinary);
      // In order: what comes while the hello is taken in is heard after it.
      if (hello) void hello.then(() => take(message));
      else take(message);
    });
    // A closed channel is not a dead node: it keeps forwarding from its last config. The session stays
    // until its heartbeats are overdue (then it is offline and its LBs move), or the node reconnects.
    ws.on('close', () => this.changed());
  }

  /** Status and per-node convergence of an LB, as far as the nodes connected to this replica tell. */
  runtime(lbId: string, configVersion: number): LbRuntime {
    return runtimeOf(this.runtimeParts(lbId), configVersion);
  }

  /** The parts of an LB's runtime the nodes connected here hold (see runtimeParts). */
  runtimeParts(lbId: string, l7Nodes = this.l7Sessions(), now = this.clock.now()): NodePart[] {
    const hosts = (this.fleet.placement.get(lbId) ?? [])
      .map((id) => this.sessions.get(id))
      .filter((s) => s !== undefined);
    return runtimeParts(lbId, {
      compiled: this.cache.get(lbId),
      hosts,
      l7Nodes,
      serving: this.fleet.serving.get(lbId),
      isOnline: (s) => this.liveness.isOnline(s, now),
    });
  }

  /** What may have changed in the LBs' runtime: their generation moves, and they are noted for takeRuntimeTouched. */
  private runtimeMoved(lbs: LbsTouched): void {
    this.runtimeGeneration++;
    if (this.runtimeTouched === 'all') return;
    if (lbs === 'all') this.runtimeTouched = 'all';
    else for (const id of lbs) this.runtimeTouched.add(id);
  }

  /**
   * The LBs whose parts may have changed since the last call ('all': any), for RuntimeShare: a write's acks
   * publish that LB's parts, not the fleet's (about 5 ms at 1,000 LBs).
   */
  takeRuntimeTouched(): ReadonlySet<string> | 'all' {
    const touched = this.runtimeTouched;
    this.runtimeTouched = new Set();
    return touched;
  }

  /** These LBs' parts held here (those without any left out), for the other replicas. */
  runtimePartsOf(lbIds: Iterable<string> | 'all'): Map<string, NodePart[]> {
    const out = new Map<string, NodePart[]>();
    if (this.sessions.size === 0) return out;
    const l7Nodes = this.l7Sessions();
    const now = this.clock.now();
    for (const id of lbIds === 'all' ? this.cache.lbs.map((lb) => lb.id) : lbIds) {
      const parts = this.runtimeParts(id, l7Nodes, now);
      if (parts.length > 0) out.set(id, parts);
    }
    return out;
  }

  /** These spread LBs' online hosts among the nodes here, for the other replicas (see place). */
  spreadHosts(lbIds: ReadonlySet<string> | 'all'): Map<string, Rival[]> {
    const out = new Map<string, Rival[]>();
    if (this.sessions.size === 0) return out;
    const now = this.clock.now();
    for (const { id, mode } of this.cache.lbs) {
      if (mode !== 'spread' || (lbIds !== 'all' && !lbIds.has(id))) continue;
      const hosts: Rival[] = [];
      for (const nodeId of this.fleet.placement.get(id) ?? []) {
        const s = this.sessions.get(nodeId);
        if (s !== undefined && this.liveness.isOnline(s, now)) hosts.push({ nodeId, serves: vipNodeOf(s).serves(id) });
      }
      if (hosts.length > 0) out.set(id, hosts);
    }
    return out;
  }

  private l7Sessions(): Session[] {
    return [...this.sessions.values()].filter((s) => s.kind === 'l7');
  }

  /**
   * Whether this replica counts the node online, as placement does (a node busy applying a config, or a
   * stall of this process, is not silence); undefined when the node has no session here.
   */
  nodeOnline(nodeId: string): boolean | undefined {
    const session = this.sessions.get(nodeId);
    return session === undefined ? undefined : this.liveness.isOnline(session);
  }

  /** Per node, why this listener is not running there (empty when it runs everywhere it should). */
  listenerErrors(listenerId: string): { nodeId: string; reason: string }[] {
    const out: { nodeId: string; reason: string }[] = [];
    for (const s of this.sessions.values()) {
      for (const f of s.failures) if (f.listenerId === listenerId) out.push({ nodeId: s.nodeId, reason: f.reason });
    }
    return out.sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1));
  }

  /** Told of every disconnect asked of this hub (the other replicas close that node's session too). */
  onDisconnect: ((nodeId: string, reason: string) => void) | null = null;

  /**
   * Closes a node's session (deleted, or its credential replaced): it is offline from now on. `tell`: pass it
   * on to onDisconnect (false when another replica told us).
   */
  disconnect(nodeId: string, reason: string, tell = true): void {
    if (tell) this.onDisconnect?.(nodeId, reason);
    const session = this.sessions.get(nodeId);
    this.rejoin.delete(nodeId);
    this.l4Rejoin.delete(nodeId);
    if (!session) return;
    this.sessions.delete(nodeId);
    this.runtimeMoved('all');
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

  /** Who the hello is from, checked against the database; then its session (null: refused). */
  private async hello(ws: WebSocket, message: HelloMessage, identity: NodeIdentity | undefined) {
    const who = await helloIdentity(this.store, message, identity);
    if (this.closed) return null;
    if ('reason' in who) {
      if (who.close) return this.refuse(ws, who.reason);
      this.reject(ws, who.reason);
      return null;
    }
    return this.open(ws, who, message, identity === undefined);
  }

  /**
   * One credential, one live session: a copy of it (a cloned host, a thief) does not take over a node that is
   * still heartbeating. A node whose old connection went silent is let back in.
   */
  private stillConnected(nodeId: string): boolean {
    const previous = this.sessions.get(nodeId);
    return previous !== undefined && previous.ws.readyState === previous.ws.OPEN && this.liveness.isOnline(previous);
  }

  private async open(ws: WebSocket, who: NodeIdentity, hello: HelloMessage, legacy: boolean): Promise<Session | null> {
    const duplicate = () => {
      this.log.warn({ nodeId: who.nodeId }, 'second connection for a node that is still connected: refused');
      return this.refuse(ws, 'this node is already connected');
    };
    if (this.stillConnected(who.nodeId)) return duplicate();
    if (this.sharedFleet && this.sessions.size === 0) {
      this.adopting ??= this.adoptFleet().finally(() => {
        this.adopting = null;
      });
    }
    // Read before this node's own heartbeat is written, and waited for by every hello meanwhile.
    await this.adopting;
    if (!(await touchNodeRow(this.store, who, legacy))) return this.refuse(ws, 'this node is not registered');
    if (legacy) await sendLegacyCredential(this.store, ws, who.nodeId, this.log);
    // The deny set as a resumed node must hold it (resumable compares what it was sent with this).
    this.deny = await this.readDeny();
    if (this.closed || ws.readyState !== ws.OPEN) return null;
    // Another connection of this node may have come in while the row was written.
    if (this.stillConnected(who.nodeId)) return duplicate();
    const previous = this.sessions.get(who.nodeId);
    if (previous) previous.ws.close(4000, 'replaced by a newer connection of the same node');
    const session = newSession(ws, who, hello, this.clock.now());
    // A node back on this replica with what it was sent (a restart, a dropped channel) is sent what changed,
    // not its whole config again: at fleet size, tens of MB to serialise here and to parse there.
    const resumed =
      previous !== undefined &&
      previous.kind === who.kind &&
      resumable(previous, hello, this.delivery.epoch, this.delivery.refreshShared());
    if (previous && resumed) resumeFrom(session, previous);
    this.sessions.set(who.nodeId, session);
    this.runtimeMoved('all');
    this.rejoin.delete(who.nodeId);
    this.l4Rejoin.delete(who.nodeId);
    if (who.kind === 'l4') {
      this.track(recordVipMode(this.store, who.nodeId, session.reusePort ? 'active-active' : 'active-standby'));
    }
    this.log.info(
      { nodeId: who.nodeId, kind: who.kind, address: who.address, appliedVersion: hello.appliedVersion, resumed },
      'node connected',
    );
    this.recompileSoon();
    return session;
  }

  /**
   * Keeps where the moved LBs are now, for the next controller. Not when no L4 node is online here: a replica
   * holding only L7 nodes (or none online) would overwrite with nothing where another replica's nodes serve.
   */
  private async storePlacement(moved: string[]): Promise<void> {
    if (moved.length === 0 || this.onlineL4().length === 0) return;
    try {
      await this.placements.store(this.fleet.placement, moved);
    } catch (err) {
      // A node deleted between its last recompile and this one (its id still placed): the next restart
      // places those LBs afresh. Serving them now does not depend on this.
      this.log.warn({ err, moved: moved.length }, 'placement not stored');
    }
  }

  /** The online, undrained L4 nodes, as placement sees them. */
  private onlineL4(now = this.clock.now()) {
    const rows = this.nodeRows;
    return [...this.sessions.values()]
      .filter((s) => s.kind === 'l4' && this.liveness.isOnline(s, now))
      .flatMap((s) => {
        const row = rows.get(s.nodeId);
        return row === undefined || row.drain ? [] : [{ id: s.nodeId, ...row }];
      });
  }

  private checkLiveness(): void {
    this.liveness.tick(this.sessions);
    const now = this.clock.now();
    const signature = [...this.sessions.values()]
      .filter((s) => this.liveness.isOnline(s, now))
      .map((s) => s.nodeId)
      .join(' ');
    if (signature !== this.onlineSignature) {
      this.onlineSignature = signature;
      this.runtimeMoved('all');
    }
    // No node to push to (and recompile() then places nothing, so the L4 set would look changed forever):
    // the first hello recompiles.
    if (this.sessions.size === 0) return;
    // An L7 node going silent (or heard again) moves no LB, but the L4 nodes relay HTTP to the pool they
    // were sent: without a recompile they would keep sending to a dead node until an unrelated change.
    const l7Changed = JSON.stringify(this.l7Pool()) !== this.compiledL7Pool;
    if (l7Changed || this.fleet.onlineChanged(new Set(this.onlineL4().map((n) => n.id)))) this.changed();
  }

  /** The L7 nodes the L4 nodes spread HTTP over: the online ones, and those still rejoining after a restart. */
  private l7Pool() {
    const now = this.clock.now();
    return [
      ...[...this.sessions.values()]
        .filter((s) => s.kind === 'l7' && this.liveness.isOnline(s, now))
        .map((s) => ({ nodeId: s.nodeId, address: s.address })),
      ...this.rejoin.entries().map(([nodeId, address]) => ({ nodeId, address })),
    ]
      .map((n) => ({ ...n, port: L7_PORT_BASE, healthy: true }))
      .sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1));
  }

  /**
   * Reads what changed, then places and pushes with no await in between: the sessions, the placement and
   * what each node was sent move together.
   */
  private async recompile(): Promise<void> {
    // Nothing to push to: compile lazily when the first node says hello.
    if (this.sessions.size === 0) {
      this.recorder?.markDirty();
      this.recorder?.observe();
      return;
    }
    const { changed, beyond } = await this.cache.refresh();
    this.nodeRows = await placementRows(this.store);
    // The L7 nodes' `l4Nodes`: every L4 node address, whether its channel is open or not.
    const l4Addresses = await l4NodeAddresses(this.store);
    this.deny = await this.readDeny();
    if (this.closed) return;
    const vipNodes = new Map(
      [...this.sessions.values()].filter((s) => s.kind === 'l4').map((s) => [s.nodeId, vipNodeOf(s)]),
    );
    const moved = this.fleet.update(
      this.cache.lbs,
      this.onlineL4(),
      vipNodes,
      (id) => this.cache.get(id)?.address ?? null,
      this.l4Rejoin.nodeIds(),
      this.elsewhere,
    );
    // LBs created, deleted or moved between nodes are diffed like a write's own, a few at a time; a node
    // come or gone moves many at once, and one pass over the fleet is then the cheaper diff.
    const fullDiff =
      beyond || moved.length > MOVED_FOR_FULL_DIFF || moved.some((id) => this.cache.get(id)?.address === null);
    const touched = [...new Set([...changed, ...moved])];
    let pushedWhole = false;
    const l7Pool = this.l7Pool();
    const l7Json = JSON.stringify(l7Pool);
    this.compiledL7Pool = l7Json;
    const l4Json = JSON.stringify(l4Addresses);
    const sharedJson = this.delivery.refreshShared();
    const fleet: Fleet = {
      lbs: this.cache.lbs,
      compiled: this.cache.all,
      placement: this.fleet.placement,
      serving: this.fleet.serving,
      l4Addresses,
    };
    for (const session of this.sessions.values()) {
      if (session.ws.readyState !== session.ws.OPEN) continue;
      // Deltas carry listeners only: a changed L4 fleet reaches an L7 node as a whole new snapshot (rare). A
      // node sent nothing yet gets its first config below anyway, or carries on from the one it holds.
      if (session.kind === 'l7' && session.sentVersion !== null && session.sentL4Nodes !== l4Json) {
        resendSnapshot(session);
      }
      // A node registered or an address pool added changed the deny set. A node that cannot take it in a delta
      // gets everything again; before, it kept the old set until it reconnected.
      if (!session.denyDeltas && session.sentShared !== null && session.sentShared !== sharedJson) {
        resendSnapshot(session);
      }
      // A write touches one LB of thousands: diff only that LB for each node (what made fleet-wide diffs
      // per write cost tens of ms at 1,000 LBs), unless the change can reach other LBs.
      const onlyChanged =
        !fullDiff &&
        session.sentVersion !== null &&
        !session.resumed &&
        (session.kind === 'l7' || session.sentL7Nodes === l7Json);
      if (onlyChanged) this.delivery.pushChanged(session, fleet, touched);
      else if (session.kind === 'l4') this.delivery.pushL4(session, fleet, l7Pool);
      else this.delivery.pushL7(session, fleet);
      if (!onlyChanged) pushedWhole = true;
    }
    this.recorder?.recompiled(fullDiff, l7Json, changed, moved);
    // A whole config sent can mark any LB applied (alreadyCarried) or change what names its failures.
    this.runtimeMoved(fullDiff || pushedWhole ? 'all' : new Set(touched));
    await this.storePlacement(moved);
  }
}
