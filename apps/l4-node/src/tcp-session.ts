import net from 'node:net';
import type { FlowKey } from '@slb/balancing';
import type { BackendState, TrackedConn } from './backend-pool.js';
import { ReadRelay } from './read-relay.js';
import type { TcpListener } from './tcp-listener.js';

/**
 * One client connection: pick a backend, connect (retrying on another backend when refused or timed out,
 * while the client's bytes wait unread in its socket), then relay both ways ({@link ReadRelay}).
 */
export class TcpSession implements TrackedConn {
  private upstream: net.Socket | undefined;
  private upstreamRelay: ReadRelay | undefined;
  private backend: BackendState | undefined;
  private tried: BackendState[] | undefined;
  private attempts = 0;
  private connectTimer: NodeJS.Timeout | undefined;
  private connected = false;
  private clientClosed = false;
  private upstreamClosed = false;
  private finished = false;
  private key: string | undefined;
  private reportedIn = 0;
  private reportedOut = 0;
  /** For the idle timeout, checked on the listener's one-second tick instead of a timer per socket. */
  private lastActive = 0;
  private movedAtTick = 0;

  constructor(
    private readonly listener: TcpListener,
    private readonly client: net.Socket,
    private readonly clientRelay: ReadRelay,
    private readonly flow: FlowKey,
  ) {}

  start(): void {
    this.client.on('error', this.onClientError);
    this.client.on('close', this.onClientClose);
    const now = this.listener.deps.now();
    this.key = this.listener.flowKey(this.flow);
    const tracked = this.listener.trackedBackend(this.key, now);
    this.connect(tracked ?? this.listener.pool.pick(this.flow, now, undefined));
  }

  /** Draining reached its timeout: cut both sides. */
  drainClose(): void {
    this.client.destroy();
    this.upstream?.destroy();
  }

  private connect(backend: BackendState | undefined): void {
    const l = this.listener;
    if (backend === undefined || this.attempts >= l.maxAttempts) {
      l.lm.noBackend.inc();
      this.client.resetAndDestroy();
      return;
    }
    if (this.attempts > 0) l.lm.retries.inc();
    this.attempts++;
    this.backend = backend;
    const relay = new ReadRelay();
    const up = net.connect({
      host: backend.address,
      port: backend.port,
      allowHalfOpen: true,
      noDelay: true,
      onread: relay.onread,
    });
    this.upstream = up;
    this.upstreamRelay = relay;
    up.on('error', this.onUpstreamError);
    up.on('close', this.onUpstreamClose);
    up.once('connect', this.onConnect);
    this.connectTimer = setTimeout(this.onConnectTimeout, l.connectTimeoutMs);
  }

  private retry(reason: string): void {
    const failed = this.backend!;
    failed.metrics.connectFailures.inc();
    this.listener.deps.logger.debug(
      { listener: this.listener.id, backend: failed.id, attempt: this.attempts, reason },
      'backend connect failed',
    );
    const up = this.upstream!;
    this.upstream = undefined;
    up.off('close', this.onUpstreamClose);
    up.destroy();
    if (this.clientClosed) {
      this.finish();
      return;
    }
    this.tried ??= [];
    this.tried.push(failed);
    const now = this.listener.deps.now();
    this.connect(this.listener.pool.pick(this.flow, now, this.tried));
  }

  private readonly onConnectTimeout = (): void => {
    this.connectTimer = undefined;
    if (!this.connected) this.retry('timeout');
  };

  private readonly onConnect = (): void => {
    clearTimeout(this.connectTimer);
    this.connectTimer = undefined;
    const l = this.listener;
    const up = this.upstream!;
    const b = this.backend!;
    if (this.clientClosed) {
      up.destroy();
      return;
    }
    this.connected = true;
    b.active++;
    b.conns.add(this);
    b.metrics.active.inc();
    b.metrics.opened.inc();
    const now = l.deps.now();
    l.pool.remember(this.flow.srcAddr, b, now);
    l.sync.publishPersistence(this.flow.srcAddr, b.id);
    // Over the insert-rate cap the connection is simply not tracked (compute-only): a proxied TCP
    // connection is pinned to its backend by its own sockets, so all it loses is the conntrack entry.
    if (l.conntrack.insert(this.key!, b.id, 'tcp-established', now) === 'rate-limited') l.lm.untracked.inc();
    const header = l.proxyHeader(this.flow);
    if (header !== undefined) up.write(header);
    const client = this.client;
    this.lastActive = now;
    client.once('end', this.onClientEnd);
    // The upstream starts reading right after this event; the client was paused since accept.
    this.clientRelay.connect(client, up);
    this.upstreamRelay!.connect(up, client);
    client.resume();
  };

  private readonly onClientEnd = (): void => {
    if (this.key !== undefined) this.listener.conntrack.setState(this.key, 'tcp-closing', this.listener.deps.now());
  };

  /** The listener's one-second tick: adds the bytes moved to the metrics and enforces the idle timeout. */
  tick(now: number, idleTimeoutMs: number): void {
    if (!this.connected) return;
    this.flushBytes();
    const moved = this.reportedIn + this.reportedOut;
    if (moved !== this.movedAtTick) {
      this.movedAtTick = moved;
      this.lastActive = now;
    } else if (idleTimeoutMs > 0 && now - this.lastActive >= idleTimeoutMs) {
      this.client.destroy();
      this.upstream?.destroy();
    }
  }

  private readonly onUpstreamError = (err: NodeJS.ErrnoException): void => {
    if (!this.connected) {
      clearTimeout(this.connectTimer);
      this.connectTimer = undefined;
      this.retry(err.code ?? err.message);
      return;
    }
    this.client.destroy();
  };

  private readonly onClientError = (): void => {
    this.upstream?.destroy();
  };

  private readonly onUpstreamClose = (hadError: boolean): void => {
    this.upstreamClosed = true;
    // A clean FIN from the backend was already passed on by the relay; cutting the client now could drop bytes
    // still queued toward it. Anything else (reset, drain, idle) ends the client too.
    if (hadError || !this.upstream?.readableEnded) this.client.destroy();
    this.finish();
  };

  private readonly onClientClose = (hadError: boolean): void => {
    this.clientClosed = true;
    if (!this.connected) {
      clearTimeout(this.connectTimer);
      this.connectTimer = undefined;
      this.upstream?.destroy();
    } else if (hadError || !this.client.readableEnded) {
      this.upstream?.destroy();
    }
    this.finish();
  };

  private finish(): void {
    if (this.finished || !this.clientClosed || (this.connected && !this.upstreamClosed)) return;
    if (this.upstream !== undefined && !this.connected && !this.upstreamClosed) return;
    this.finished = true;
    const l = this.listener;
    l.sessionEnded(this);
    if (this.key !== undefined) l.conntrack.delete(this.key);
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
