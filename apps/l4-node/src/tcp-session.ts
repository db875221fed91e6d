import type { FlowKey } from '@slb/balancing';
import { uvError } from '@slb/node-runtime';
import type { BackendPool, BackendState, TrackedConn } from './backend-pool.js';
import type { ConnectDeadlines, PendingConnect } from './connect-deadlines.js';
import type { ListenerSync } from './listener-sync.js';
import type { ListenerMetrics } from './metrics.js';
import { connectRaw, type RawSocket, type RawSocketEvents } from './raw-tcp.js';

/**
 * What a session needs of the listener that accepted it. Declared here and implemented by TcpListener, so
 * the session depends on this slice and the listener on the session, not each on the other.
 */
export interface SessionHost {
  readonly id: string;
  readonly deps: {
    readonly now: () => number;
    readonly logger: { debug(obj: object, msg: string): void };
  };
  readonly cfg: { readonly sourceAddress?: string };
  readonly pool: BackendPool;
  readonly lm: ListenerMetrics;
  readonly sync: ListenerSync;
  readonly connectTimeoutMs: number;
  /** The listener's pending connects, behind one timer. */
  readonly pendingConnects: ConnectDeadlines;
  readonly maxAttempts: number;
  /** The PROXY header the listener sends ahead of the client's bytes, if any. */
  proxyHeader(flow: FlowKey): Buffer | undefined;
  sessionEnded(session: TcpSession): void;
}

/**
 * One client connection: pick a backend, connect (retrying on another backend when refused or timed out,
 * while the client's bytes wait unread in its socket), then relay both ways ({@link RawSocket.relayTo}).
 */
export class TcpSession implements TrackedConn, RawSocketEvents, PendingConnect {
  private upstream: RawSocket | undefined;
  private backend: BackendState | undefined;
  private tried: BackendState[] | undefined;
  private attempts = 0;
  connectDeadline = 0;
  /** Its places among the listener's sessions and its backend's open connections (DenseSet). */
  listenerSlot = -1;
  backendSlot = -1;
  prevPending: PendingConnect | undefined;
  nextPending: PendingConnect | undefined;
  private connected = false;
  private finished = false;
  private reportedIn = 0;
  private reportedOut = 0;
  /** For the idle timeout, checked on the listener's one-second tick instead of a timer per socket. */
  private lastActive = 0;
  private movedAtTick = 0;

  constructor(
    private readonly listener: SessionHost,
    private readonly client: RawSocket,
    private readonly flow: FlowKey,
    /** The client's key in the listener's per-client counts, released when the session ends. */
    readonly clientSlot: string | undefined,
  ) {
    client.events = this;
  }

  start(): void {
    const now = this.listener.deps.now();
    this.connect(this.listener.pool.pick(this.flow, now, undefined), now);
  }

  /** Draining, the idle timeout or a failure: cut both sides now. */
  drainClose(): void {
    this.client.close();
    this.upstream?.close();
  }

  private connect(backend: BackendState | undefined, now: number): void {
    const l = this.listener;
    if (backend === undefined || this.attempts >= l.maxAttempts) {
      l.lm.noBackend.inc();
      this.client.reset();
      return;
    }
    if (this.attempts > 0) l.lm.retries.inc();
    this.attempts++;
    this.backend = backend;
    this.upstream = connectRaw(backend.address, backend.port, this, l.cfg.sourceAddress);
    l.pendingConnects.add(this, now + l.connectTimeoutMs);
  }

  private retry(reason: string): void {
    this.listener.pendingConnects.remove(this);
    const failed = this.backend!;
    failed.metrics.connectFailures.inc();
    this.listener.deps.logger.debug(
      { listener: this.listener.id, backend: failed.id, attempt: this.attempts, reason },
      'backend connect failed',
    );
    const up = this.upstream!;
    this.upstream = undefined;
    up.events = undefined;
    up.close();
    this.tried ??= [];
    this.tried.push(failed);
    const now = this.listener.deps.now();
    this.connect(this.listener.pool.pick(this.flow, now, this.tried), now);
  }

  connectTimedOut(): void {
    if (!this.connected && this.upstream !== undefined) this.retry('timeout');
  }

  rawConnected(up: RawSocket, status: number): void {
    if (up !== this.upstream || this.connected) return;
    if (status !== 0) {
      this.retry(uvError(status, 'connect').code ?? String(status));
      return;
    }
    const l = this.listener;
    l.pendingConnects.remove(this);
    this.connected = true;
    const b = this.backend!;
    b.active++;
    b.track(this);
    b.metrics.active.inc();
    b.metrics.opened.inc();
    const now = l.deps.now();
    l.pool.remember(this.flow.srcAddr, b, now);
    l.sync.publishPersistence(this.flow.srcAddr, b.id);
    const header = l.proxyHeader(this.flow);
    if (header !== undefined) up.write(header);
    this.lastActive = now;
    // The client was not read from until now, so nothing it sent is lost if a connect has to be retried.
    this.client.relayTo(up);
    up.relayTo(this.client);
  }

  rawEnded(): void {}

  /** A reset, or a write toward a peer that went away: the connection is over both ways. */
  rawFailed(): void {
    this.drainClose();
  }

  /**
   * A socket closed. One that closed by itself finished both ways cleanly (it read a FIN and sent one after
   * everything relayed), and the other side then finishes on its own; every other close closes both.
   */
  rawClosed(): void {
    this.finish();
  }

  /** The listener's one-second tick: adds the bytes moved to the metrics and enforces the idle timeout. */
  tick(now: number, idleTimeoutMs: number): void {
    if (!this.connected) return;
    this.flushBytes();
    const moved = this.reportedIn + this.reportedOut;
    if (moved !== this.movedAtTick) {
      this.movedAtTick = moved;
      this.lastActive = now;
    } else if (idleTimeoutMs > 0 && now - this.lastActive >= idleTimeoutMs) {
      this.drainClose();
    }
  }

  private finish(): void {
    if (this.finished || !this.client.closed) return;
    if (this.upstream !== undefined && !this.upstream.closed) {
      // Not connected yet: the client went (drain, listener stop), so the pending connect goes too.
      if (!this.connected) this.upstream.close();
      return;
    }
    this.finished = true;
    const l = this.listener;
    l.pendingConnects.remove(this);
    l.sessionEnded(this);
    if (!this.connected) return;
    const b = this.backend!;
    b.active--;
    b.metrics.active.dec();
    this.flushBytes();
    b.release(this);
  }

  /**
   * Adds the bytes moved since the last call to the backend's counters. Called once a second by the
   * listener and at the end, so long-lived connections show up in metrics without per-chunk accounting.
   */
  private flushBytes(): void {
    if (!this.connected) return;
    const m = this.backend!.metrics;
    const read = this.client.bytesRead;
    const written = this.client.bytesWritten;
    if (read > this.reportedIn) m.bytesIn.inc(read - this.reportedIn);
    if (written > this.reportedOut) m.bytesOut.inc(written - this.reportedOut);
    this.reportedIn = read;
    this.reportedOut = written;
  }
}
