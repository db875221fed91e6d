import type { TSchema } from '@sinclair/typebox';
import {
  CONTROL_CHANNEL_MAX_BYTES,
  CONTROL_CHANNEL_PATH,
  HEARTBEAT_INTERVAL_MS,
  type ListenerFailure,
  type NodeLoadReport,
  type NodeMessage,
  type TrafficReport,
} from '@slb/model';
import WebSocket from 'ws';
import { reconnectDelay } from './backoff.js';
import { applyListenerDelta } from './delta.js';
import { checkEnvelope, splitListeners } from './listener-split.js';
import { type NodeCredential, resolveCredential, saveCredential } from './node-credential.js';
import { loadSavedSnapshot, peekSavedVersion, saveSnapshot } from './state-file.js';
import { sealKeyOf } from './state-seal.js';

export interface ChannelLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

interface VersionedSnapshot {
  version: number;
  generatedAt: string;
  listeners: { id: string }[];
}

export interface ControlChannelOptions<S extends VersionedSnapshot> {
  /** Control plane base URL, e.g. http://127.0.0.1:8080 (SLB_API_URL). */
  apiUrl: string;
  /**
   * One-time join token (SLB_NODE_JOIN_TOKEN), exchanged at start for the node's own credential, kept in
   * `stateDir`. Later starts use the saved credential; a different join token is a rotation. Never logged.
   */
  joinToken?: string;
  /** The legacy shared token (SLB_NODE_TOKEN), for a fleet migrating to credentials; never logged. */
  token?: string;
  /** The id, kind and address announced when joining with the legacy token (a credential carries its own). */
  nodeId: string;
  kind: 'l4' | 'l7';
  address: string;
  /** 100 = a normal node. */
  capacity: number;
  /** Where the last applied snapshot is kept (SLB_STATE_DIR). */
  stateDir: string;
  /** The schema the saved snapshot is checked against at start (messages are checked against the channel schemas). */
  schema: TSchema;
  /**
   * Applies a validated snapshot. After a delta, `change` names what it touched (the upserted objects are
   * the ones in `snapshot.listeners`), so a node with thousands of listeners can look at those alone.
   * Returns the listeners it could not build (each keeps its last good config, if any; the rest are
   * applied), reported in the ack. Throws (with a reason) only for what is not a listener's, refusing all.
   */
  apply(snapshot: S, change?: SnapshotChange): Promise<AppliedListeners>;
  load(): NodeLoadReport;
  /**
   * The traffic summary of each heartbeat (a TrafficReporter's report()); absent: none sent. Called once
   * per heartbeat, so its cost is paid once a second.
   */
  traffic?(): TrafficReport;
  /**
   * The node's listener failures now (binds still being retried, configs it could not build), sent in every
   * heartbeat and used for the acks instead of what the applies returned, so the control plane sees a
   * failure heal or appear between two configs. Default: the failures the applies returned, in acks only.
   */
  currentFailures?(): readonly ListenerFailure[];
  /**
   * Whether this node can share a VIP:port with peer nodes on its host (SO_REUSEPORT; see
   * runtime-capabilities.ts), said in the hello. Default: not said (the hub takes that as no).
   */
  reusePort?: boolean;
  /**
   * The addresses the node serves listeners on now, said in each hello: a controller that restarted (or
   * lost this node for a while) then leaves an active-standby VIP on the node that binds it, instead of
   * handing it to whichever node said hello first and making the two fight over the port.
   */
  boundVips?(): readonly string[];
  /**
   * Called once the node knows the address the control plane knows it by (its credential's, else
   * `address`), before any snapshot is applied: the L4 node connects upstream from it.
   */
  identified?(address: string): void;
  logger: ChannelLogger;
  /** Default 3000 ms, as the issue asks: a node is back within seconds of the control plane. */
  maxReconnectDelayMs?: number;
  /**
   * The first applied snapshot is saved at once, later ones at most once per this many ms (longer for a
   * snapshot that is slow to serialise, up to 10 s). Default 500.
   */
  saveIntervalMs?: number;
}

/** How long a node whose credential was refused waits before it tries again. */
const REFUSED_RETRY_MS = 30_000;
/** The close code of a session the controller refused (see the hub's refuse()). */
const REFUSED_CLOSE_CODE = 4003;

/** Longest a saved snapshot lags the applied one because saves are spaced out. */
const MAX_SAVE_INTERVAL_MS = 10_000;

/**
 * Time between two saves of the applied snapshot. A save holds the event loop while it serialises (tens of
 * ms for thousands of listeners), delaying forwarding and acks: saves are spaced so that they take at most
 * ~2% of the loop, and the file never lags the applied config by more than MAX_SAVE_INTERVAL_MS.
 */
export function saveSpacingMs(baseMs: number, lastBlockingMs: number): number {
  if (baseMs <= 0) return 0;
  return Math.max(baseMs, Math.min(MAX_SAVE_INTERVAL_MS, Math.round(lastBlockingMs * 50)));
}

/** What a delta touched: its upserted listeners (as placed in the new snapshot) and removed ids. */
export interface SnapshotChange {
  upsert: readonly { id: string }[];
  remove: readonly string[];
  /** The L4 node's L7 pool changed too (every HTTP/HTTPS listener is affected). */
  l7NodesChanged: boolean;
}

/** What an apply returns: the listeners it could not build, or nothing when it built them all. */
// biome-ignore lint/suspicious/noConfusingVoidType: an apply that builds every listener returns nothing.
export type AppliedListeners = readonly ListenerFailure[] | undefined | void;

/** Failures named in one ack at most (bounded like the message; the node logs every one). */
const MAX_REPORTED_FAILURES = 1000;

const sortById = <L extends { id: string }>(list: L[]) => list.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/**
 * The node side of the control channel: dials out, says hello with its last applied version, applies
 * snapshots and deltas (validated first: a bad message is nacked and the last good config keeps serving,
 * a bad listener is refused alone and named in the ack), acks, sends heartbeats, and reconnects with
 * jittered backoff.
 */

export class ControlChannelClient<S extends VersionedSnapshot> {
  current: S | null = null;
  connected = false;
  private socket: WebSocket | null = null;
  private attempt = 0;
  private closed = false;
  private heartbeat: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private queue: Promise<void> = Promise.resolve();
  private readonly listeners = new Set<(version: number) => void>();
  /** After a 401 (deleted node, rotated or unknown credential) the next attempt waits until then. */
  private refusedUntil = 0;

  constructor(private readonly options: ControlChannelOptions<S>) {}

  /**
   * Serves the saved snapshot (static stability) and connects at the same time: a node that dialed only
   * after loading and applying a big saved config looked offline to the controller for seconds after a
   * restart, and its load balancers moved away and back. The hello announces the saved version (read from
   * the file's first bytes); controller messages wait in the queue until the saved config is applied.
   */
  async start(): Promise<void> {
    this.credential = await resolveCredential({
      apiUrl: this.options.apiUrl,
      stateDir: this.options.stateDir,
      kind: this.options.kind,
      joinToken: this.options.joinToken,
      logger: this.options.logger,
      isClosed: () => this.closed,
    });
    if (!this.credential && this.options.token === undefined) {
      throw new Error('no node credential: enroll with SLB_NODE_JOIN_TOKEN (a join token from POST /v1/nodes)');
    }
    if (this.credential && this.credential.kind !== this.options.kind) {
      throw new Error(`the saved credential is for an ${this.credential.kind} node`);
    }
    this.sealKey = this.credential ? sealKeyOf(this.credential.credential) : undefined;
    this.options.identified?.(this.credential?.address ?? this.options.address);
    this.savedVersion = await peekSavedVersion(this.options.stateDir);
    const applied = this.loadSaved();
    this.queue = applied;
    this.connect();
    await applied;
  }

  private async loadSaved(): Promise<void> {
    const saved = await loadSavedSnapshot<S>(this.options.stateDir, this.options.schema, this.sealKey);
    if (saved.snapshot) {
      await this.applySaved(saved.snapshot);
      return;
    }
    // Announced but unusable: the controller's delta from that version will be out of step, and the resync
    // asks for a full snapshot.
    this.savedVersion = null;
    if ('reason' in saved) this.options.logger.info({ reason: saved.reason }, 'no saved snapshot in use');
  }

  /** Who this node is once enrolled; null while it joins with the legacy token. */
  credential: NodeCredential | null = null;
  /** Seals the private keys in the saved snapshot (state-seal.ts). */
  private sealKey: Buffer | undefined;

  /** The saved snapshot's version while it is being applied: the hello announces it (see start()). */
  private savedVersion: number | null = null;

  private async applySaved(snapshot: S): Promise<void> {
    try {
      await this.options.apply(snapshot);
      this.current = snapshot;
      this.options.logger.info(
        { version: snapshot.version },
        'serving the saved snapshot until the control plane answers',
      );
    } catch (err) {
      // The hello may already have announced its version: the delta the controller answers with is then out of
      // step, and the resync that follows asks for a full snapshot.
      this.options.logger.warn(
        { err: String(err) },
        'the saved snapshot could not be applied; waiting for the control plane',
      );
    } finally {
      this.savedVersion = null;
    }
  }

  /** Resolves when a snapshot of at least `version` has been applied. */
  onApplied(listener: (version: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.socket?.close();
    await this.queue;
    await this.flushed();
  }

  private connect(): void {
    if (this.closed) return;
    const url = `${this.options.apiUrl.replace(/^http/, 'ws').replace(/\/$/, '')}${CONTROL_CHANNEL_PATH}`;
    const socket = new WebSocket(url, {
      headers: { authorization: `Bearer ${this.credential?.credential ?? this.options.token}` },
      maxPayload: CONTROL_CHANNEL_MAX_BYTES,
      handshakeTimeout: 5000,
    });
    this.socket = socket;
    socket.on('open', () => {
      this.connected = true;
      this.attempt = 0;
      this.send({
        type: 'hello',
        nodeId: this.credential?.nodeId ?? this.options.nodeId,
        kind: this.options.kind,
        address: this.credential?.address ?? this.options.address,
        capacity: this.options.capacity,
        appliedVersion: this.current?.version ?? this.savedVersion ?? 0,
        ...(this.options.reusePort === undefined ? {} : { reusePort: this.options.reusePort }),
        ...(this.options.boundVips === undefined ? {} : { boundVips: [...this.options.boundVips()] }),
      });
      this.heartbeat = setInterval(() => this.send(this.heartbeatMessage()), HEARTBEAT_INTERVAL_MS);
      this.options.logger.info({ url }, 'control channel connected');
    });
    socket.on('message', (data) => {
      this.queue = this.queue
        .then(() => this.handle(data.toString()))
        .catch((err) => {
          this.options.logger.error({ err: String(err) }, 'control message handling failed');
        });
    });
    socket.on('unexpected-response', (_req, res) => {
      const why =
        res.statusCode === 401
          ? this.credential
            ? 'credential refused: this node was deleted, or its credential rotated'
            : 'the shared token was refused (is SLB_LEGACY_NODE_TOKEN=1 set on the API?)'
          : 'control plane refused the channel';
      this.options.logger.warn({ status: res.statusCode }, why);
      // Refused for who it is: retrying every few seconds only adds to the control plane's refusal count.
      if (res.statusCode === 401) this.refusedUntil = Date.now() + REFUSED_RETRY_MS;
    });
    socket.on('error', (err) => this.options.logger.warn({ err: err.message }, 'control channel error'));
    socket.on('close', (code) => {
      // 4003: the controller refused this node for who it is (already connected elsewhere, wrong kind).
      if (code === REFUSED_CLOSE_CODE) this.refusedUntil = Date.now() + REFUSED_RETRY_MS;
      this.connected = false;
      if (this.heartbeat) clearInterval(this.heartbeat);
      this.heartbeat = null;
      if (this.closed) return;
      const delay = Math.max(
        reconnectDelay(this.attempt++, 200, this.options.maxReconnectDelayMs ?? 3000),
        this.refusedUntil - Date.now(),
      );
      this.refusedUntil = 0;
      this.reconnectTimer = setTimeout(() => this.connect(), delay);
    });
  }

  private saving: Promise<void> | null = null;
  private saveAgain = false;

  private saveTimer: NodeJS.Timeout | null = null;

  /**
   * Saves the current snapshot for static stability, off the ack path: serialising a big fleet's snapshot
   * costs more than applying a delta. At most one write per `saveIntervalMs` (the newest snapshot), and
   * while one write runs, only the newest snapshot is written next.
   */
  private persist(): void {
    if (this.saveTimer) return;
    const wait = saveSpacingMs(this.options.saveIntervalMs ?? 500, this.lastSaveBlockingMs);
    if (wait > 0 && this.savedOnce) {
      this.saveTimer = setTimeout(() => {
        this.saveTimer = null;
        this.writeNow();
      }, wait);
      return;
    }
    this.savedOnce = true;
    this.writeNow();
  }

  private savedOnce = false;
  private lastSaveBlockingMs = 0;

  private writeNow(): void {
    if (this.saving) {
      this.saveAgain = true;
      return;
    }
    const snapshot = this.current;
    this.saving = saveSnapshot(this.options.stateDir, snapshot, this.sealKey)
      .then(({ blockingMs }) => {
        this.lastSaveBlockingMs = blockingMs;
      })
      .catch((err) => this.options.logger.error({ err: String(err) }, 'could not save the snapshot to disk'))
      .finally(() => {
        this.saving = null;
        if (this.saveAgain) {
          this.saveAgain = false;
          this.writeNow();
        }
      });
  }

  /** Resolves once the snapshot applied last is on disk. */
  async flushed(): Promise<void> {
    if (this.saveTimer) {
      clearTimeout(this.saveTimer);
      this.saveTimer = null;
      this.writeNow();
    }
    while (this.saving) await this.saving;
  }

  private send(message: NodeMessage): void {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  private async handle(text: string): Promise<void> {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.options.logger.warn({}, 'control plane sent a message that is not JSON; ignored');
      return;
    }
    if (!checkEnvelope.Check(message)) {
      const first = checkEnvelope.Errors(message).First();
      const reason = `invalid message at ${first?.path || '/'}: ${first?.message}`;
      const version =
        (message as { version?: unknown; snapshot?: { version?: unknown } } | null)?.version ??
        (message as { snapshot?: { version?: unknown } } | null)?.snapshot?.version;
      // A config we cannot read is refused out loud (the API shows it on the node); anything else is noise.
      if (typeof version === 'number' && Number.isInteger(version) && version >= 0)
        this.send({ type: 'nack', version, reason });
      this.options.logger.warn({ path: first?.path, error: first?.message }, 'invalid control message refused');
      return;
    }
    if (message.type === 'credential') {
      await this.adoptCredential(message.nodeId, message.credential);
      return;
    }
    if (message.type === 'error') {
      this.options.logger.warn({ reason: message.reason }, 'control plane reported an error');
      return;
    }
    if (message.kind !== this.options.kind) {
      this.options.logger.warn({ kind: message.kind }, 'config for another kind of node ignored');
      return;
    }
    let next: unknown;
    let change: SnapshotChange | undefined;
    let refused: ListenerFailure[];
    if (message.type === 'snapshot') {
      const { valid, failed } = splitListeners<{ id: string }>(message.kind, message.snapshot.listeners);
      refused = failed;
      // A listener sent unreadable keeps the config it had here, if it had one.
      const kept = new Map((this.current?.listeners ?? []).map((l) => [l.id, l]));
      const keep = failed.map((f) => kept.get(f.listenerId)).filter((l) => l !== undefined);
      next = { ...message.snapshot, listeners: keep.length === 0 ? valid : sortById([...valid, ...keep]) };
    } else {
      if (!this.current || this.current.version !== message.fromVersion) {
        // Out of step: reconnecting says hello with our version, and the controller answers with a snapshot.
        this.options.logger.warn(
          { have: this.current?.version, fromVersion: message.fromVersion },
          'delta out of step; resyncing',
        );
        this.socket?.close();
        return;
      }
      const base = this.current as unknown as Record<string, unknown>;
      const l7Nodes = 'l7Nodes' in message ? message.l7Nodes : undefined;
      const l7NodesChanged = l7Nodes !== undefined;
      // An unreadable upsert is left out: the listener keeps what it had (or stays absent).
      const { valid: upsert, failed } = splitListeners<{ id: string }>(message.kind, message.upsert);
      refused = failed;
      next = {
        ...base,
        version: message.version,
        generatedAt: message.generatedAt,
        listeners: applyListenerDelta(this.current.listeners, upsert, message.remove),
        ...(l7NodesChanged ? { l7Nodes } : {}),
      };
      change = { upsert, remove: message.remove, l7NodesChanged };
    }
    for (const f of refused) {
      this.options.logger.warn(
        { listener: f.listenerId, reason: f.reason },
        'listener refused; the others are applied',
      );
    }
    await this.applyAndAck(next, change, refused);
  }

  /** Listeners of the applied config the node does not serve as sent, by id: reported in every ack. */
  readonly failing = new Map<string, string>();

  /** Of {@link failing}, the listeners refused before the node saw them (their config was unreadable). */
  private readonly refusedHere = new Map<string, string>();

  /** A full snapshot restates every listener; a delta only those it names. */
  private trackFailures(
    change: SnapshotChange | undefined,
    refused: readonly ListenerFailure[],
    failed: readonly ListenerFailure[],
  ): void {
    if (change === undefined) {
      this.failing.clear();
      this.refusedHere.clear();
    } else {
      for (const id of [...change.remove, ...change.upsert.map((l) => l.id)]) {
        this.failing.delete(id);
        this.refusedHere.delete(id);
      }
    }
    for (const f of refused) this.refusedHere.set(f.listenerId, f.reason);
    for (const f of [...refused, ...failed]) this.failing.set(f.listenerId, f.reason);
  }

  /**
   * Listeners refused here (unreadable configs) and, where the node reports them, its current failures;
   * else what the applies returned. At most MAX_REPORTED_FAILURES (the node logs every one).
   */
  private reportedFailures(): ListenerFailure[] {
    const current = this.options.currentFailures?.();
    let all = this.failing;
    if (current !== undefined) {
      all = new Map(current.map((f) => [f.listenerId, f.reason]));
      // The newer word on a listener: its latest config could not even be read.
      for (const [id, reason] of this.refusedHere) all.set(id, reason);
    }
    return [...all].slice(0, MAX_REPORTED_FAILURES).map(([listenerId, reason]) => ({ listenerId, reason }));
  }

  private ackMessage(version: number): NodeMessage {
    const failedListeners = this.reportedFailures();
    if (failedListeners.length === 0) return { type: 'ack', version };
    return { type: 'ack', version, failedListeners };
  }

  /** Failures ride along only with a node that reports its current ones; an empty list says "all healed". */
  private heartbeatMessage(): NodeMessage {
    const load = this.options.load();
    const traffic = this.options.traffic?.();
    return {
      type: 'heartbeat',
      load,
      ...(this.options.currentFailures === undefined ? {} : { failedListeners: this.reportedFailures() }),
      ...(traffic === undefined ? {} : { traffic }),
    };
  }

  /** Enrolled on joining with the legacy token: keep the credential and present it from the next connection. */
  private async adoptCredential(nodeId: string, credential: string): Promise<void> {
    if (this.credential) return;
    const next: NodeCredential = { nodeId, kind: this.options.kind, address: this.options.address, credential };
    try {
      await saveCredential(this.options.stateDir, next);
    } catch (err) {
      this.options.logger.error({ err: String(err) }, 'could not save the credential; staying on the shared token');
      return;
    }
    this.credential = next;
    this.sealKey = sealKeyOf(credential);
    this.options.logger.info({ nodeId }, 'enrolled over the shared token: credential saved, used from now on');
    if (this.current) this.persist();
  }

  /**
   * Applies a snapshot the message check already validated (a delta's listeners were validated as part of
   * the message, and its base was validated when it arrived), acks it, then saves it to disk.
   */
  private async applyAndAck(
    next: unknown,
    change: SnapshotChange | undefined,
    refused: readonly ListenerFailure[],
  ): Promise<void> {
    const version = (next as { version: number }).version;
    const started = performance.now();
    let failed: readonly ListenerFailure[];
    try {
      failed = (await this.options.apply(next as S, change)) || [];
    } catch (err) {
      const reason = (err as Error).message || String(err);
      this.send({ type: 'nack', version, reason });
      this.options.logger.warn({ version, reason }, 'snapshot could not be applied; keeping the last good config');
      return;
    }
    this.current = next as S;
    this.trackFailures(change, refused, failed);
    this.send(this.ackMessage(version));
    this.persist();
    this.options.logger.info(
      {
        version,
        listeners: (next as S).listeners.length,
        applyMs: Math.round((performance.now() - started) * 10) / 10,
      },
      'config applied',
    );
    for (const l of this.listeners) l(version);
  }
}
