// performance is imported, not taken from globalThis, where it is an accessor (a getter call per use).

import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { ReadBuffer } from '@slb/node-runtime';
import { HandleIo, type HandleIoEvents } from './handle-io.js';

// Raw keep-alive sockets to backends for the fast path, one pool per listener and backend (poolKeyOf in
// server-group.ts; never shared across listeners or tenants): a LIFO stack of idle sockets
// (the most recently used one is the least likely to have been closed by the backend), a cap on sockets
// per backend with a FIFO queue behind it. An exchange owns a socket while it holds it; the pool only
// watches idle ones, and drops one the backend closes or talks on.

export interface UpstreamPoolOptions {
  /** Most sockets to one backend (connecting, busy and idle); further requests queue. Default 256. */
  readonly connectionsPerBackend?: number;
  /** Connect timeout in ms; a backend slower than this counts as a connect failure. Default 3000. */
  readonly connectTimeoutMs?: number;
  /** Idle keep-alive lifetime in ms, under node's 5 s server default. Default 4000. */
  readonly idleTimeoutMs?: number;
}

/** Responses are read into a buffer per socket (see ReadBuffer): 16 KiB, 64 KiB once a read fills it. */
const READ_MIN = 16 * 1024;
const READ_MAX = 64 * 1024;

/** What the socket's current holder is told; set while an exchange owns the socket. */
export interface UpstreamHandler {
  /**
   * Bytes from the backend, in the socket's read buffer: true when the handler still refers to them after
   * returning (a write of them is pending), so the next read goes into another buffer. Bytes kept for
   * longer must be copied.
   */
  onData(chunk: Buffer): boolean;
  /** The backend closed its side (EOF). */
  onEnd(): void;
  /** The socket is gone (after an error or a close). */
  onClose(err: Error | null): void;
  /** The backend drained what was written (request body backpressure). */
  onDrain(): void;
}

export class UpstreamConn implements HandleIoEvents {
  handler: UpstreamHandler | null = null;
  /** Served a request before, so a reset before any response byte may just mean a stale keep-alive. */
  reused = false;
  idleSince = 0;
  readonly socket: Socket;
  /** Reads and writes go on the socket's handle (handle-io.ts); reads into {@link reads}. */
  readonly io: HandleIo;
  private error: Error | null = null;
  private readonly reads = new ReadBuffer(READ_MIN, READ_MAX);

  constructor(
    host: string,
    port: number,
    private readonly pool: OriginPool,
  ) {
    this.socket = connect({
      host,
      port,
      noDelay: true,
      onread: { buffer: () => this.reads.current, callback: this.onRead },
    });
    const socket = this.socket;
    this.io = new HandleIo(socket, this);
    // net.connect made the handle already; without one, reads stay on net's `onread` path above.
    this.io.takeUserBufferReads(this.readInto);
    socket.on('end', () => {
      if (this.handler) this.handler.onEnd();
      // Closed by the backend while idle: out of the pool at once rather than when the close completes.
      else socket.destroy();
    });
    socket.on('error', (err) => {
      this.error = err;
    });
    socket.on('close', () => {
      const h = this.handler;
      this.handler = null;
      pool.gone(this);
      h?.onClose(this.error ?? new Error('backend closed the connection'));
    });
  }

  private readonly onRead = (n: number, buf: Buffer): boolean => {
    this.read(n, buf);
    return true;
  };

  private readonly readInto = (n: number): Buffer => this.read(n, this.reads.current);

  /** `n` bytes read into `buf`; returns the buffer for the next read. */
  private read(n: number, buf: Buffer): Buffer {
    let held = false;
    if (this.handler) held = this.handler.onData(buf.subarray(0, n));
    // A backend talking while nobody asked (idle in the pool) is out of step.
    else this.socket.destroy();
    return this.reads.afterRead(n, held);
  }

  onWritten(): void {
    this.handler?.onDrain();
  }

  /** Reads come into the user buffer (readInto), never as buffers of their own. */
  onBytes(): void {}

  /** Back to the pool after a complete keep-alive exchange; `now` is performance.now(). */
  release(now = performance.now()): void {
    this.handler = null;
    this.reused = true;
    if (this.socket.destroyed) return;
    this.pool.idle(this, now);
  }

  /** Drops the socket (unknown state, half-read response, error). */
  discard(): void {
    this.handler = null;
    this.socket.destroy();
  }
}

export type AcquireCallback = (conn: UpstreamConn | null) => void;

/** A queued request for a socket; cancel() when its request ends first. */
export interface Waiter {
  cancel(): void;
}

class OriginPool {
  private readonly idleStack: UpstreamConn[] = [];
  private readonly waiters: AcquireCallback[] = [];
  private open = 0;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly max: number,
    private readonly connectTimeoutMs: number,
    private readonly idleTimeoutMs: number,
  ) {}

  acquire(cb: AcquireCallback, now: number): Waiter | null {
    while (this.idleStack.length > 0) {
      const c = this.idleStack.pop()!;
      if (now - c.idleSince < this.idleTimeoutMs && !c.socket.destroyed) {
        cb(c);
        return null;
      }
      c.socket.destroy();
    }
    if (this.open < this.max) {
      this.connect(cb);
      return null;
    }
    this.waiters.push(cb);
    return {
      cancel: () => {
        const i = this.waiters.indexOf(cb);
        if (i >= 0) this.waiters.splice(i, 1);
      },
    };
  }

  private connect(cb: AcquireCallback): void {
    this.open++;
    const conn = new UpstreamConn(this.host, this.port, this);
    const socket = conn.socket;
    let settled = false;
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      socket.destroy();
      cb(null);
    }, this.connectTimeoutMs);
    // The connect outcome is told once: the conn's own close handler covers what happens after.
    const failed = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      cb(null);
    };
    socket.once('close', failed);
    socket.once('connect', () => {
      socket.removeListener('close', failed);
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      cb(conn);
    });
  }

  idle(c: UpstreamConn, now: number): void {
    const next = this.waiters.shift();
    if (next) {
      next(c);
      return;
    }
    c.idleSince = now;
    this.idleStack.push(c);
  }

  gone(c: UpstreamConn): void {
    this.open--;
    const i = this.idleStack.indexOf(c);
    if (i >= 0) this.idleStack.splice(i, 1);
    const next = this.waiters.shift();
    if (next) this.connect(next);
  }

  /** Closes idle sockets older than the idle timeout (the stack's bottom is the oldest). */
  sweep(now: number): void {
    let stale = 0;
    while (stale < this.idleStack.length && now - this.idleStack[stale]!.idleSince >= this.idleTimeoutMs) stale++;
    if (stale === 0) return;
    for (const c of this.idleStack.splice(0, stale)) c.socket.destroy();
  }

  destroyIdle(): void {
    for (const c of this.idleStack.splice(0)) c.socket.destroy();
  }

  get busy(): boolean {
    return this.open > this.idleStack.length || this.waiters.length > 0;
  }
}

export class UpstreamPools {
  private readonly pools = new Map<string, OriginPool>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: UpstreamPoolOptions = {}) {
    this.sweeper = setInterval(() => {
      const now = performance.now();
      for (const p of this.pools.values()) p.sweep(now);
    }, 1000);
    this.sweeper.unref();
  }

  /**
   * A socket of pool `key` (to host:port), handed to `cb`, now or once one is free; `cb(null)` when the
   * connection could not be made. Returns a Waiter when the request had to queue. `now`: performance.now(),
   * passed in by a caller that read the clock already.
   */
  acquire(key: string, host: string, port: number, cb: AcquireCallback, now = performance.now()): Waiter | null {
    let pool = this.pools.get(key);
    if (!pool) {
      pool = new OriginPool(
        host,
        port,
        this.options.connectionsPerBackend ?? 256,
        this.options.connectTimeoutMs ?? 3000,
        this.options.idleTimeoutMs ?? 4000,
      );
      this.pools.set(key, pool);
    }
    return pool.acquire(cb, now);
  }

  /** The pool keys open now. */
  keys(): IterableIterator<string> {
    return this.pools.keys();
  }

  /** Forgets pools whose keys are no longer in `inUse` (their busy sockets finish, idle ones close). */
  retain(inUse: ReadonlySet<string>): void {
    for (const [key, pool] of this.pools) {
      if (inUse.has(key)) continue;
      pool.destroyIdle();
      if (!pool.busy) this.pools.delete(key);
    }
  }

  close(): void {
    clearInterval(this.sweeper);
    for (const p of this.pools.values()) p.destroyIdle();
    this.pools.clear();
  }
}
