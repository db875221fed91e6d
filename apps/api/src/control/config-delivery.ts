import { randomBytes } from 'node:crypto';
import {
  BackendSetNames,
  type ControllerMessage,
  type L7NodeSnapshot,
  type NodeSnapshot,
  type SnapshotBackendDeny,
} from '@slb/model';
import type { FastifyBaseLogger } from 'fastify';
import { type ControlWork, l4PortKey } from './compile-cache.js';
import type { CompiledL4Listener, CompiledLb, L7ListenerConfig } from './compile-lb.js';
import { configDigest, listenerHash } from './config-digest.js';
import type { LbSummary } from './lb-rows.js';
import { withFields, withListeners } from './message-text.js';
import { alreadyCarried, type LbVersions, type Session } from './node-session.js';
import type { VipServing } from './vip-serving.js';

/** What the nodes should run now, as the orchestrator last decided it. */
export interface Fleet {
  lbs: readonly LbSummary[];
  compiled: ReadonlyMap<string, CompiledLb>;
  /** LB → the L4 nodes hosting it. */
  placement: ReadonlyMap<string, string[]>;
  /** LB → how its hosts carry its VIP and which of them bind it. */
  serving: ReadonlyMap<string, VipServing>;
  /** The L4 node addresses (the L7 nodes' `l4Nodes`). */
  l4Addresses: string[];
}

type L7Pool = NodeSnapshot['l7Nodes'];
/** What a first snapshot carries besides listeners, the same for every node. */
type SharedFields = Pick<NodeSnapshot, 'backendDeny' | 'sessionSyncPrefix'>;
/**
 * A listener as this node should have it: its diff key (`json`) and, when sent, its config as JSON text
 * (the compiled listener's JSON with this node's fields added: built only for the listeners sent), its
 * backends named from `sets` when the node reads backend sets.
 */
type Wanted = {
  id: string;
  json: string;
  text: (sets: BackendSetNames<string> | null) => string;
  /** The listener's hash for the node's digest (config-digest.ts), computed once per compile. */
  hash: () => bigint;
};

/**
 * Each compiled listener's hash, plain and shared (its diff key with `|shared`), by the compiled object: computed
 * once per compile, whatever the number of nodes it goes to (10 µs and more per listener of 50 servers).
 */
const hashes = new WeakMap<object, { plain?: bigint; shared?: bigint }>();

function cachedHash(compiled: object, id: string, json: string, variant: 'plain' | 'shared'): bigint {
  let entry = hashes.get(compiled);
  if (entry === undefined) {
    entry = {};
    hashes.set(compiled, entry);
  }
  entry[variant] ??= listenerHash(id, json);
  return entry[variant];
}

export interface ConfigDeliveryOptions {
  log: FastifyBaseLogger;
  /** The first version issued is the one after this (versions outlive a restart: they start from the clock). */
  startVersion: number;
  /** Largest message sent to a node. */
  maxMessageBytes: number;
  /** Called for a config too large to send: the node keeps its last one. */
  tooLarge: (session: Session, version: number, reason: string) => void;
  now: () => number;
  /** Counts the LBs diffed; default: a counter nobody reads. */
  work?: ControlWork;
  /** This process's epoch (SnapshotEpoch); default: random. */
  epoch?: string;
}

/**
 * Turns the fleet's config into each node's snapshot or delta: diffs it against what the node was sent,
 * numbers it, and records what the node will have once it acks it.
 */
export class ConfigDelivery {
  private version: number;
  /** The backend deny set every first snapshot carries. */
  backendDeny: () => SnapshotBackendDeny[] = () => [];
  /** The deployment's session-sync prefix, sent in every first snapshot (the nodes' default namespace). */
  sessionSyncPrefix: string | undefined;

  private readonly work: ControlWork;
  /**
   * Names this process in the first snapshot of each session: versions alone may repeat across processes
   * (each starts from its clock), and a resume must know the node holds what this process sent.
   */
  readonly epoch: string;

  constructor(private readonly options: ConfigDeliveryOptions) {
    this.version = options.startVersion;
    this.work = options.work ?? { lbsCompiled: 0, lbsDiffed: 0 };
    this.epoch = options.epoch ?? randomBytes(16).toString('hex');
  }

  /** The fields every first snapshot carries besides listeners, as last read (refreshShared), and as JSON. */
  private sharedNow: { fields: SharedFields; json: string } | null = null;

  /**
   * Reads the shared fields again (the deny set follows the nodes and the address pools): once per recompile.
   * Returns them as JSON, which each session compares with what it was sent.
   */
  refreshShared(): string {
    const fields = {
      backendDeny: this.backendDeny(),
      ...(this.sessionSyncPrefix ? { sessionSyncPrefix: this.sessionSyncPrefix } : {}),
    };
    this.sharedNow = { fields, json: JSON.stringify(fields) };
    return this.sharedNow.json;
  }

  private shared(): { fields: SharedFields; json: string } {
    if (this.sharedNow === null) this.refreshShared();
    return this.sharedNow!;
  }

  /** Diffs an L4 node's whole config against what it was sent. */
  pushL4(session: Session, fleet: Fleet, l7Pool: L7Pool): void {
    const lbVersions = new Map<string, number>();
    const wanted: Wanted[] = [];
    const byLb = new Map<string, string[]>();
    const owner = new Map<string, string>();
    const portsByLb = new Map<string, string[]>();
    this.work.lbsDiffed += fleet.lbs.length;
    for (const lb of fleet.lbs) {
      if (!(fleet.placement.get(lb.id) ?? []).includes(session.nodeId)) continue;
      const compiled = fleet.compiled.get(lb.id);
      if (!compiled) continue;
      lbVersions.set(lb.id, compiled.configVersion);
      const ids: string[] = [];
      const keys: string[] = [];
      // A standby hosts the LB without its listeners: converged once it acks, ready to take the VIP over.
      const serving = fleet.serving.get(lb.id);
      const binds = serving?.binders.includes(session.nodeId) ?? false;
      for (const listener of binds ? compiled.l4 : []) {
        const { config } = listener;
        // LBs on their own VIPs never meet; an LB without one (none left in its pools) shares the node's.
        const key = l4PortKey(config, compiled.address ?? session.address);
        if (owner.has(key)) {
          this.options.log.warn(
            { nodeId: session.nodeId, listenerId: config.id, port: config.port },
            'port already served on this node',
          );
          lbVersions.set(lb.id, -1);
          continue;
        }
        owner.set(key, lb.id);
        keys.push(key);
        ids.push(config.id);
        wanted.push(l4Wanted(session, compiled, serving!, listener));
      }
      byLb.set(lb.id, ids);
      portsByLb.set(lb.id, keys);
    }
    session.portOwner = owner;
    session.portsByLb = portsByLb;
    this.pushAll(session, fleet, wanted, byLb, lbVersions, l7Pool);
  }

  /** Diffs an L7 node's whole config (every HTTP/HTTPS listener) against what it was sent. */
  pushL7(session: Session, fleet: Fleet): void {
    const lbVersions = new Map<string, number>();
    const wanted: Wanted[] = [];
    const byLb = new Map<string, string[]>();
    this.work.lbsDiffed += fleet.lbs.length;
    for (const lb of fleet.lbs) {
      const compiled = fleet.compiled.get(lb.id);
      if (!compiled) continue;
      lbVersions.set(lb.id, compiled.configVersion);
      byLb.set(
        lb.id,
        compiled.l7.map((l) => l.config.id),
      );
      for (const entry of compiled.l7) wanted.push(l7Wanted(session, entry));
    }
    this.pushAll(session, fleet, wanted, byLb, lbVersions);
  }

  /**
   * Diffs only the given LBs (changed, created, deleted, moved between nodes), when nothing else can have
   * moved: no LB sharing the node's address changed its ports, and the L7 pool is the same. The cost of a
   * write is then that of its LB, not of the fleet.
   */
  pushChanged(session: Session, fleet: Fleet, lbIds: string[]): void {
    const upsert: Wanted[] = [];
    const remove: string[] = [];
    // Only the changed LBs' versions: copying every LB's per write was the largest cost left at 1,000 LBs.
    const lbVersions = new Map<string, number>();
    this.work.lbsDiffed += lbIds.length;
    for (const lbId of lbIds) {
      const compiled = fleet.compiled.get(lbId);
      const ids =
        session.kind === 'l4'
          ? this.changedL4(session, fleet, lbId, upsert, lbVersions)
          : this.changedL7(session, compiled, lbId, upsert, lbVersions);
      const kept = new Set(ids);
      for (const id of session.sentByLb.get(lbId) ?? []) if (!kept.has(id)) remove.push(id);
      if (ids.length > 0) session.sentByLb.set(lbId, ids);
      else session.sentByLb.delete(lbId);
    }
    this.deliver(session, fleet, upsert, remove, { full: false, versions: lbVersions });
  }

  /** One LB's L4 listeners for this node (none if it left the node): its ports taken again, as pushL4 does. */
  private changedL4(
    session: Session,
    fleet: Fleet,
    lbId: string,
    upsert: Wanted[],
    lbVersions: Map<string, number>,
  ): string[] {
    for (const key of session.portsByLb.get(lbId) ?? []) {
      if (session.portOwner.get(key) === lbId) session.portOwner.delete(key);
    }
    session.portsByLb.delete(lbId);
    const compiled = fleet.compiled.get(lbId);
    if (!compiled || !(fleet.placement.get(lbId) ?? []).includes(session.nodeId)) return [];
    lbVersions.set(lbId, compiled.configVersion);
    const serving = fleet.serving.get(lbId);
    const binds = serving?.binders.includes(session.nodeId) ?? false;
    const ids: string[] = [];
    const keys: string[] = [];
    for (const listener of binds ? compiled.l4 : []) {
      const { config } = listener;
      const key = l4PortKey(config, compiled.address ?? session.address);
      if (session.portOwner.has(key)) {
        this.options.log.warn(
          { nodeId: session.nodeId, listenerId: config.id, port: config.port },
          'port already served on this node',
        );
        lbVersions.set(lbId, -1);
        continue;
      }
      session.portOwner.set(key, lbId);
      keys.push(key);
      ids.push(config.id);
      const wanted = l4Wanted(session, compiled, serving!, listener);
      if (session.sentJson.get(config.id) !== wanted.json) upsert.push(wanted);
    }
    session.portsByLb.set(lbId, keys);
    return ids;
  }

  private changedL7(
    session: Session,
    compiled: CompiledLb | undefined,
    lbId: string,
    upsert: Wanted[],
    lbVersions: Map<string, number>,
  ): string[] {
    if (!compiled) return [];
    lbVersions.set(lbId, compiled.configVersion);
    const ids: string[] = [];
    for (const entry of compiled.l7) {
      ids.push(entry.config.id);
      if (session.sentJson.get(entry.config.id) !== entry.json) upsert.push(l7Wanted(session, entry));
    }
    return ids;
  }

  private pushAll(
    session: Session,
    fleet: Fleet,
    wanted: Wanted[],
    byLb: Map<string, string[]>,
    lbVersions: Map<string, number>,
    l7Pool?: L7Pool,
  ): void {
    if (session.claimed !== null) this.adopt(session, fleet, wanted, l7Pool);
    const first = session.sentVersion === null;
    const upsert = first ? wanted : wanted.filter((w) => session.sentJson.get(w.id) !== w.json);
    const wantedIds = new Set(wanted.map((w) => w.id));
    const remove = first ? [] : [...session.sentJson.keys()].filter((id) => !wantedIds.has(id));
    session.sentByLb = byLb;
    this.deliver(session, fleet, upsert, remove, { full: true, versions: lbVersions }, l7Pool);
  }

  /**
   * A node that says it holds a config with a digest (hello) and has not been sent one here: when what it would
   * be sent now has that digest, it holds exactly that (a restart of this process, another replica that sent
   * it), and its session carries on from its version with an empty delta instead of the whole config.
   */
  private adopt(session: Session, fleet: Fleet, wanted: Wanted[], l7Pool: L7Pool | undefined): void {
    const claimed = session.claimed!;
    session.claimed = null;
    const shared = this.shared();
    const peers = session.kind === 'l4' ? JSON.stringify(l7Pool ?? []) : JSON.stringify(fleet.l4Addresses);
    const hashed = wanted.map((w): [string, bigint] => [w.id, w.hash()]);
    let xor = 0n;
    for (const [, hash] of hashed) xor ^= hash;
    if (configDigest({ listeners: xor, shared: shared.json, peers }) !== claimed.digest) return;
    session.sentVersion = claimed.version;
    session.sentJson = new Map(wanted.map((w) => [w.id, w.json]));
    session.sentHashes = new Map(hashed);
    session.sentXor = xor;
    session.sentShared = shared.json;
    if (session.kind === 'l4') session.sentL7Nodes = peers;
    else session.sentL4Nodes = peers;
    session.resumed = true;
    this.options.log.info(
      { nodeId: session.nodeId, version: claimed.version, listeners: wanted.length },
      'node holds the config it would be sent: carrying on with a delta',
    );
  }

  /**
   * The digest of the config the node will hold once it applies this message, and the listeners' XOR it is
   * made of (see config-digest.ts); only for a node that keeps epochs (and so digests).
   */
  private digestAfter(
    session: Session,
    upsert: Wanted[],
    remove: string[],
    shared: string,
    peers: string,
  ): { digest: string; xor: bigint } | undefined {
    if (!session.resumes) return undefined;
    // A first snapshot starts from nothing (sentHashes was emptied with it).
    let xor = session.sentVersion === null ? 0n : session.sentXor;
    for (const id of remove) xor ^= session.sentHashes.get(id) ?? 0n;
    for (const w of upsert) xor ^= (session.sentHashes.get(w.id) ?? 0n) ^ w.hash();
    return { digest: configDigest({ listeners: xor, shared, peers }), xor };
  }

  /** Sends a delta (or the first snapshot) and records what the node will have once it acks it. */
  private deliver(
    session: Session,
    fleet: Fleet,
    upsert: Wanted[],
    remove: string[],
    lbVersions: LbVersions,
    l7Pool?: L7Pool,
  ): void {
    const first = session.sentVersion === null;
    const l7Json = l7Pool === undefined ? null : JSON.stringify(l7Pool);
    const l7Changed = l7Json !== null && l7Json !== session.sentL7Nodes;
    const shared = this.shared();
    // A node that does not take the deny set in a delta is sent a snapshot instead (see ControlHub.recompile).
    const denyChanged = !first && session.denyDeltas && session.sentShared !== shared.json;
    // A resumed session is answered even with nothing changed: the node learns it is up to date.
    if (!first && !session.resumed && !denyChanged && upsert.length === 0 && remove.length === 0 && !l7Changed) {
      alreadyCarried(session, lbVersions);
      return;
    }
    upsert.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const version = ++this.version;
    const l4Addresses = fleet.l4Addresses;
    const sets = session.kind === 'l4' && session.backendSets ? new BackendSetNames<string>() : null;
    // Each listener's JSON is spliced in as text: at a fleet's size, building the listeners as objects and
    // serialising them again cost the event loop half a second per joining node (bench/join-deliver.mjs).
    const listeners = upsert.map((w) => w.text(sets));
    const peers =
      session.kind === 'l4'
        ? (l7Json ?? session.sentL7Nodes ?? '[]')
        : first
          ? JSON.stringify(l4Addresses)
          : (session.sentL4Nodes ?? '[]');
    const after = this.digestAfter(
      session,
      upsert,
      remove,
      first || denyChanged ? shared.json : (session.sentShared ?? ''),
      peers,
    );
    const message = this.message(session, first ? shared.fields : undefined, {
      version,
      generatedAt: new Date(this.options.now()).toISOString(),
      listeners: [],
      remove,
      l7Pool: first || l7Changed ? l7Pool : undefined,
      l4Addresses,
      backendSets: sets !== null && sets.size > 0,
      backendDeny: denyChanged ? shared.fields.backendDeny : undefined,
      digest: after?.digest,
    });
    let text = withListeners(JSON.stringify(message), first ? 'listeners' : 'upsert', listeners);
    if (sets !== null && sets.size > 0) text = withListeners(text, 'backendSets', [...sets.texts((json) => json)]);
    const bytes = Buffer.byteLength(text);
    const max = this.options.maxMessageBytes;
    if (bytes > max) {
      // The node would drop the connection on it, reconnect and be sent it again, forever, each time costing
      // us a full compile and serialisation: refuse it here, once per change, and say why.
      const reason = `config of ${bytes} bytes exceeds the control channel limit of ${max} bytes`;
      this.options.log.error({ nodeId: session.nodeId, version, bytes }, 'config too large for the control channel');
      this.options.tooLarge(session, version, reason);
      const error: ControllerMessage = { type: 'error', reason };
      session.ws.send(JSON.stringify(error));
      return;
    }
    session.sentVersion = version;
    session.resumed = false;
    if (after !== undefined) {
      session.sentXor = after.xor;
      for (const id of remove) session.sentHashes.delete(id);
      for (const w of upsert) session.sentHashes.set(w.id, w.hash());
    }
    if (first || denyChanged) session.sentShared = shared.json;
    for (const id of remove) session.sentJson.delete(id);
    for (const w of upsert) session.sentJson.set(w.id, w.json);
    if (l7Json !== null) session.sentL7Nodes = l7Json;
    if (first && session.kind === 'l7') session.sentL4Nodes = JSON.stringify(l4Addresses);
    session.lbVersionsSent.set(version, lbVersions);
    session.ws.send(text);
  }

  /** The first snapshot for a node not sent anything yet, else a delta from what it was sent. */
  private message(
    session: Session,
    shared: SharedFields | undefined,
    m: {
      version: number;
      generatedAt: string;
      listeners: unknown[];
      remove: string[];
      l7Pool: L7Pool | undefined;
      l4Addresses: string[];
      /** The message carries backend sets (an empty array, for the sets' texts). */
      backendSets: boolean;
      /** (A delta) the deny set, when it changed. */
      backendDeny: SharedFields['backendDeny'];
      /** The digest of the config the message makes, to a node that keeps epochs. */
      digest: string | undefined;
    },
  ): ControllerMessage {
    const { version, generatedAt } = m;
    if (session.sentVersion === null) {
      // After the version: a saved snapshot starts with these, and a restarted node reads them there.
      const resume = session.resumes
        ? { epoch: this.epoch, ...(m.digest === undefined ? {} : { digest: m.digest }) }
        : {};
      return session.kind === 'l4'
        ? {
            type: 'snapshot',
            kind: 'l4',
            snapshot: {
              version,
              ...resume,
              generatedAt,
              listeners: m.listeners,
              l7Nodes: m.l7Pool ?? [],
              ...shared,
              ...(m.backendSets ? { backendSets: [] } : {}),
            } as NodeSnapshot,
          }
        : {
            type: 'snapshot',
            kind: 'l7',
            snapshot: {
              version,
              ...resume,
              generatedAt,
              listeners: m.listeners,
              l4Nodes: m.l4Addresses,
              ...shared,
            } as L7NodeSnapshot,
          };
    }
    const fromVersion = session.sentVersion;
    const extra = {
      ...(m.backendDeny === undefined ? {} : { backendDeny: m.backendDeny }),
      ...(m.digest === undefined ? {} : { digest: m.digest }),
    };
    if (session.kind === 'l7') {
      const upsert = m.listeners as L7NodeSnapshot['listeners'];
      return { type: 'delta', kind: 'l7', fromVersion, version, generatedAt, upsert, remove: m.remove, ...extra };
    }
    return {
      type: 'delta',
      kind: 'l4',
      fromVersion,
      version,
      generatedAt,
      upsert: m.listeners as NodeSnapshot['listeners'],
      remove: m.remove,
      ...(m.l7Pool !== undefined ? { l7Nodes: m.l7Pool } : {}),
      ...(m.backendSets ? { backendSets: [] } : {}),
      ...extra,
    };
  }
}

function l4Wanted(session: Session, lb: CompiledLb, serving: VipServing, listener: CompiledL4Listener): Wanted {
  const { config, json } = listener;
  const shared = serving.mode === 'active-active';
  const own = `"bindAddresses":[${JSON.stringify(lb.address ?? session.address)}]${shared ? ',"reusePort":true' : ''}`;
  const key = shared ? `${json}|shared` : json;
  return {
    id: config.id,
    // The mode is part of what was sent: a node that now shares the VIP must rebind with SO_REUSEPORT.
    json: key,
    hash: () => cachedHash(listener, config.id, key, shared ? 'shared' : 'plain'),
    text: (sets) =>
      sets === null || config.backends.length === 0
        ? withFields(json, own)
        : withFields(listener.fieldsJson, `${own},"backendSet":"${sets.name(listener.backendsJson)}"`),
  };
}

function l7Wanted(session: Session, entry: { config: L7ListenerConfig; json: string }): Wanted {
  const { config, json } = entry;
  return {
    id: config.id,
    json,
    // L7 listeners carry their groups' backends inside rules (serverGroups): no sets.
    text: () => withFields(json, `"bindAddress":${JSON.stringify(session.address)}`),
    hash: () => cachedHash(entry, config.id, json, 'plain'),
  };
}
