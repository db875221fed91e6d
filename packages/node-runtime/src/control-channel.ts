import {
  CONTROL_CHANNEL_MAX_BYTES,
  CONTROL_CHANNEL_PATH,
  HEARTBEAT_INTERVAL_MS,
  type ListenerFailure,
  type NodeMessage,
} from '@slb/model';
import { Counter, Gauge } from 'prom-client';
import WebSocket from 'ws';
import {
  controlChannelUrl,
  loggableUrl,
  RETURN_PROBE_MS,
  ReplicaRotation,
  ReturnToEarlier,
  replicaReady,
} from './api-urls.js';
import type { ControlChannelOptions, SnapshotChange, VersionedSnapshot } from './control-channel-options.js';
import { ListenerFailures } from './listener-failures.js';
import { checkEnvelope } from './listener-split.js';
import { nextConfig } from './next-config.js';
import { type NodeCredential, resolveCredential, saveCredential } from './node-credential.js';
import { SnapshotSaver } from './snapshot-saver.js';
import { loadSavedSnapshot, peekSaved, type SavedHead } from './state-file.js';
import { sealKeyOf } from './state-seal.js';

export type {
  AppliedListeners,
  ChannelLogger,
  ControlChannelOptions,
  SnapshotChange,
} from './control-channel-options.js';
export { saveSpacingMs } from './snapshot-saver.js';

/** How long a node whose credential was refused waits before it tries again. */
const REFUSED_RETRY_MS = 30_000;
/** The close code of a session the controller refused (see the hub's refuse()). */
const REFUSED_CLOSE_CODE = 4003;
/**
 * A config message this long (characters) is announced with a heartbeat saying `applying` as it arrives:
 * parsing it holds the event loop in one piece (~0.5 s for a 76 MB snapshot), heartbeats included.
 */
export const APPLYING_NOTICE_CHARS = 1 << 20;

/** The version a config message carries, read from its first characters (the hub writes it first). */
export function peekConfigVersion(text: string): number | undefined {
  const m = /"version":(\d{1,15})[,}]/.exec(text.slice(0, 256));
  return m ? Number(m[1]) : undefined;
}

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
  /** The replica dialed now, and the next one when it fails. */
  private readonly replicas: ReplicaRotation;
  /** `slb_control_plane_replica`, when the node gave a registry. */
  private readonly replicaGauge: Gauge | undefined;
  /** `slb_control_configs_applied_total`, when the node gave a registry. */
  private readonly appliedCounter: Counter<'sent'> | undefined;
  private closed = false;
  private heartbeat: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private queue: Promise<void> = Promise.resolve();
  /** The version of the config being parsed or applied (said in heartbeats), or null. */
  private applying: number | null = null;
  private readonly listeners = new Set<(version: number) => void>();
  /** After a 401 (deleted node, rotated or unknown credential) the next attempt waits until then. */
  private refusedUntil = 0;
  /** On a later replica of the list: whether an earlier one is ready again, probed now and then. */
  private readonly returning = new ReturnToEarlier();
  private returnProbe: NodeJS.Timeout | null = null;
  /** The channel was closed to move back to this replica. */
  private returnTo: number | null = null;

  /** Listeners of the applied config the node does not serve as sent, by id: reported in every ack. */
  readonly failing: Map<string, string>;
  private readonly failures = new ListenerFailures();
  private readonly saver: SnapshotSaver;

  constructor(private readonly options: ControlChannelOptions<S>) {
    this.failing = this.failures.failing;
    this.replicas = new ReplicaRotation(options.apiUrls, options.maxReconnectDelayMs ?? 1000);
    this.replicaGauge =
      options.registry &&
      new Gauge({
        name: 'slb_control_plane_replica',
        help: 'Position (from 0) in SLB_API_URL of the API replica the control channel is connected to; -1 while disconnected',
        registers: [options.registry],
      });
    this.replicaGauge?.set(-1);
    this.appliedCounter =
      options.registry &&
      new Counter({
        name: 'slb_control_configs_applied_total',
        help: 'Configs from the control channel applied, by how they came (sent): a whole snapshot, or a delta (a resumed session starts with one)',
        labelNames: ['sent'],
        registers: [options.registry],
      });
    this.saver = new SnapshotSaver({
      stateDir: options.stateDir,
      saveIntervalMs: options.saveIntervalMs,
      current: () => this.current,
      sealKey: () => this.sealKey,
      logger: options.logger,
    });
  }

  /**
   * Serves the saved snapshot (static stability) and connects at the same time: a node that dialed only
   * after loading and applying a big saved config looked offline to the controller for seconds after a
   * restart, and its load balancers moved away and back. The hello announces the saved version (read from
   * the file's first bytes); controller messages wait in the queue until the saved config is applied.
   */
  async start(): Promise<void> {
    this.credential = await resolveCredential({
      apiUrls: this.options.apiUrls,
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
    this.saved = await peekSaved(this.options.stateDir);
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
    this.saved = null;
    if ('reason' in saved) this.options.logger.info({ reason: saved.reason }, 'no saved snapshot in use');
  }

  /** Who this node is once enrolled; null while it joins with the legacy token. */
  credential: NodeCredential | null = null;
  /** Seals the private keys in the saved snapshot (state-seal.ts). */
  private sealKey: Buffer | undefined;

  /** The saved snapshot's version and epoch while it is being applied: the hello announces them (see start()). */
  private saved: SavedHead | null = null;

  private async applySaved(snapshot: S): Promise<void> {
    try {
      const failed = (await this.options.apply(snapshot)) || [];
      this.current = snapshot;
      // A resumed session is sent only what changed, never a snapshot that would restate them: the acks name these.
      this.failures.track(undefined, [], failed);
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
      this.saved = null;
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
    if (this.returnProbe) clearTimeout(this.returnProbe);
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.socket?.close();
    await this.queue;
    await this.flushed();
  }

  private connect(): void {
    if (this.closed) return;
    const replica = this.replicas.index;
    const url = controlChannelUrl(this.replicas.current, CONTROL_CHANNEL_PATH);
    let opened = false;
    const socket = new WebSocket(url, {
      headers: { authorization: `Bearer ${this.credential?.credential ?? this.options.token}` },
      maxPayload: CONTROL_CHANNEL_MAX_BYTES,
      handshakeTimeout: 5000,
    });
    this.socket = socket;
    socket.on('open', () => {
      this.connected = true;
      opened = true;
      this.replicas.connected();
      this.replicaGauge?.set(replica);
      this.send({
        type: 'hello',
        nodeId: this.credential?.nodeId ?? this.options.nodeId,
        kind: this.options.kind,
        address: this.credential?.address ?? this.options.address,
        capacity: this.options.capacity,
        appliedVersion: this.current?.version ?? this.saved?.version ?? 0,
        appliedEpoch: (this.current ? this.current.epoch : this.saved?.epoch) ?? '',
        appliedDigest: (this.current ? this.current.digest : this.saved?.digest) ?? '',
        denyDeltas: true,
        rotatesFailures: true,
        ...(this.options.reusePort === undefined ? {} : { reusePort: this.options.reusePort }),
        // nextConfig resolves backend sets: an L4 node's snapshot then carries each server group's once.
        ...(this.options.kind === 'l4' ? { backendSets: true } : {}),
        ...(this.options.boundVips === undefined ? {} : { boundVips: [...this.options.boundVips()] }),
      });
      this.heartbeat = setInterval(() => this.send(this.heartbeatMessage()), HEARTBEAT_INTERVAL_MS);
      this.returning.reset();
      if (replica > 0) this.probeEarlier(replica, socket);
      this.options.logger.info(
        { url: loggableUrl(url), replica, replicas: this.replicas.urls.length },
        'control channel connected',
      );
    });
    socket.on('message', (data) => {
      const text = data.toString();
      this.announceApplying(text);
      this.queue = this.queue
        .then(() => this.handle(text))
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
    socket.on('error', (err) =>
      this.options.logger.warn({ err: err.message, url: loggableUrl(url), replica }, 'control channel error'),
    );
    socket.on('close', (code) => {
      // 4003: the controller refused this node for who it is (already connected elsewhere, wrong kind).
      if (code === REFUSED_CLOSE_CODE) this.refusedUntil = Date.now() + REFUSED_RETRY_MS;
      this.connected = false;
      this.replicaGauge?.set(-1);
      if (this.heartbeat) clearInterval(this.heartbeat);
      this.heartbeat = null;
      if (this.returnProbe) clearTimeout(this.returnProbe);
      this.returnProbe = null;
      if (this.closed) return;
      const returnTo = this.returnTo;
      this.returnTo = null;
      if (returnTo !== null) this.replicas.moveTo(returnTo);
      // The node keeps serving its last applied config meanwhile: nothing here touches it.
      else if (opened) this.options.logger.warn({ url: loggableUrl(url), replica }, 'control channel lost');
      const waitFor = returnTo === null ? this.replicas.next(opened) : 0;
      const delay = Math.max(waitFor, this.refusedUntil - Date.now());
      this.refusedUntil = 0;
      this.reconnectTimer = setTimeout(() => this.connect(), delay);
    });
  }

  /**
   * Connected to a later replica of the list: asks the earlier ones now and then whether they are ready, and
   * closes the channel to move back to the earliest once it has been ready long enough (ReturnToEarlier).
   */
  private probeEarlier(replica: number, socket: WebSocket): void {
    const every = this.options.returnProbeMs ?? RETURN_PROBE_MS;
    if (every <= 0) return;
    const current = () => !this.closed && this.socket === socket && socket.readyState === WebSocket.OPEN;
    this.returnProbe = setTimeout(
      async () => {
        this.returnProbe = null;
        let earliest: number | null = null;
        for (let i = 0; i < replica && earliest === null && current(); i++) {
          if (await replicaReady(this.replicas.urls[i]!)) earliest = i;
        }
        if (!current()) return;
        if (!this.returning.observe(earliest)) return this.probeEarlier(replica, socket);
        this.options.logger.info({ replica: earliest, from: replica }, 'an earlier API replica is ready: moving back');
        this.returnTo = earliest;
        socket.close(1000, 'moving back to an earlier replica');
      },
      every * (0.5 + Math.random()),
    );
  }

  /** Resolves once the snapshot applied last is on disk. */
  flushed(): Promise<void> {
    return this.saver.flushed();
  }

  private send(message: NodeMessage): void {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  /** A big config message: the controller hears "applying" before the parse that holds the loop. */
  private announceApplying(text: string): void {
    if (text.length < APPLYING_NOTICE_CHARS || this.applying !== null) return;
    const version = peekConfigVersion(text);
    if (version === undefined) return;
    this.applying = version;
    this.send(this.heartbeatMessage());
  }

  private async handle(text: string): Promise<void> {
    // Queued behind another apply, whose end cleared the announcement: said again until the parse is done.
    if (text.length >= APPLYING_NOTICE_CHARS) this.applying = peekConfigVersion(text) ?? this.applying;
    try {
      await this.handleConfig(text);
    } finally {
      this.applying = null;
    }
  }

  private async handleConfig(text: string): Promise<void> {
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
    this.applying = message.type === 'snapshot' ? message.snapshot.version : message.version;
    const made = await nextConfig(this.current, message);
    if (!made.inStep) {
      // Out of step: reconnecting says hello with our version, and the controller answers with a snapshot.
      this.options.logger.warn(
        { have: this.current?.version, fromVersion: 'fromVersion' in message ? message.fromVersion : undefined },
        'delta out of step; resyncing',
      );
      this.socket?.close();
      return;
    }
    const { next, change, refused } = made;
    for (const f of refused) {
      this.options.logger.warn(
        { listener: f.listenerId, reason: f.reason },
        'listener refused; the others are applied',
      );
    }
    await this.applyAndAck(next, change, refused, message.type);
  }

  /** The failures as a message carries them: those it has room to name, and how many it does not. */
  private reportedFailures(): { failedListeners: ListenerFailure[]; failedListenersOmitted?: number } {
    const { named, omitted } = this.failures.reported(this.options.currentFailures?.());
    return omitted === 0 ? { failedListeners: named } : { failedListeners: named, failedListenersOmitted: omitted };
  }

  private ackMessage(version: number): NodeMessage {
    const failures = this.reportedFailures();
    if (failures.failedListeners.length === 0) return { type: 'ack', version };
    return { type: 'ack', version, ...failures };
  }

  /** Failures ride along only with a node that reports its current ones; an empty list says "all healed". */
  private heartbeatMessage(): NodeMessage {
    const load = this.options.load();
    const traffic = this.options.traffic?.();
    return {
      type: 'heartbeat',
      load,
      ...(this.options.currentFailures === undefined ? {} : this.reportedFailures()),
      ...(traffic === undefined ? {} : { traffic }),
      ...(this.applying === null ? {} : { applying: this.applying }),
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
    if (this.current) this.saver.persist();
  }

  /**
   * Applies a snapshot the message check already validated (a delta's listeners were validated as part of
   * the message, and its base was validated when it arrived), acks it, then saves it to disk.
   */
  private async applyAndAck(
    next: VersionedSnapshot,
    change: SnapshotChange | undefined,
    refused: readonly ListenerFailure[],
    /** What the controller sent: a resumed session's first config is a delta. */
    sent: 'snapshot' | 'delta',
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
    this.appliedCounter?.inc({ sent });
    this.failures.track(change, refused, failed);
    this.send(this.ackMessage(version));
    this.saver.persist();
    this.options.logger.info(
      {
        version,
        sent,
        listeners: (next as S).listeners.length,
        applyMs: Math.round((performance.now() - started) * 10) / 10,
      },
      'config applied',
    );
    for (const l of this.listeners) l(version);
  }
}
