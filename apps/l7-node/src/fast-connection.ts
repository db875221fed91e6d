// Buffer and performance are imported, not taken from globalThis, where each is an accessor (a getter call per use).
import { Buffer } from 'node:buffer';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { type ExchangeClient, FastExchange } from './fast-exchange.js';
import { HandleIo, type HandleIoEvents } from './handle-io.js';
import { parseRequestHead, type RequestHead } from './http1-parser.js';
import { forwardingOf } from './request-flow.js';
import { type BytesRequestHead, forwardingLines, scanRequestHead } from './request-head-bytes.js';
import type { ClientInfo, ListenerState, ProxyDeps } from './request-types.js';

// A plain-HTTP client connection on the raw-socket fast path. It frames requests itself (strict parser,
// one request at a time, pipelined bytes wait in the buffer) and hands anything it is not sure of to
// node:http, untouched and only between requests: malformed or ambiguous heads are then answered 400 by
// node, and HTTP/1.0, chunked request bodies, Upgrade and Expect are served there as before. It reads and
// writes on the socket's handle (handle-io.ts) and gives reading back to the socket at a hand-over.

const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
/** Buffered client bytes beyond which reading pauses (request body waiting for the backend, pipelining). */
const HIGH_WATER = 64 * 1024;

export interface FastContext {
  readonly deps: ProxyDeps;
  /** The listener's current state; an exchange keeps the one it started with. */
  state(): ListenerState;
  /** Largest request head, bytes (431 past it). */
  readonly maxHeaderSize: number;
  /** Time to send a whole request head, ms (408 past it). */
  readonly headersTimeoutMs: number;
  /** Gives the socket to node:http (after the unread bytes were put back). */
  handOver(socket: Socket): void;
  readonly registry: FastConnections;
}

const NO_DEADLINE = 0;
const HEADERS_DEADLINE = 1;
const IDLE_DEADLINE = 2;

export class FastConnection implements ExchangeClient, HandleIoEvents {
  /** Client bytes read but not used yet: a partial head, request body, pipelined requests. */
  buf: Buffer | null = null;
  private exchange: FastExchange | null = null;
  /** Set when this connection no longer frames requests (handed over, answered and closing, gone). */
  private done = false;
  /** Close after the response in flight (the listener is draining). */
  closing = false;
  private deadline = 0;
  private deadlineKind = NO_DEADLINE;
  private pumping = false;
  private again = false;
  /** Bytes of `buf` already searched for the head's end, so a head trickling in is not rescanned. */
  private scanned = 0;
  private readonly io: HandleIo;
  /** forwardingLines(), and the listener state it was made for (a reload may change the X-Forwarded-For mode). */
  private forwarding: Buffer | null = null;
  private forwardingState: ListenerState | null = null;

  constructor(
    readonly socket: Socket,
    readonly client: ClientInfo,
    readonly ctx: FastContext,
  ) {
    socket.on('error', this.onError);
    socket.on('close', this.onClose);
    ctx.registry.add(this);
    this.arm(HEADERS_DEADLINE, performance.now());
    this.io = new HandleIo(socket, this);
    const before = this.io.takeReads();
    if (before !== null) this.onBytes(before);
  }

  private arm(kind: number, now: number): void {
    this.deadlineKind = kind;
    const state = this.ctx.state().config;
    this.deadline =
      kind === HEADERS_DEADLINE
        ? now + Math.min(this.ctx.headersTimeoutMs, state.requestTimeout * 1000)
        : now + state.idleTimeout * 1000;
  }

  onBytes(chunk: Buffer): void {
    if (this.done) return;
    this.buf = this.buf === null ? chunk : Buffer.concat([this.buf, chunk]);
    if (this.exchange) {
      this.exchange.pumpBody();
    } else {
      const now = performance.now();
      if (this.deadlineKind === IDLE_DEADLINE) this.arm(HEADERS_DEADLINE, now);
      this.pump(now);
    }
    // Bytes wait while a request is in flight or its answers are unread; a head still arriving is bounded
    // by maxHeaderSize instead.
    const waiting = this.exchange !== null || this.io.needDrain;
    if (waiting && this.buf !== null && this.buf.length >= HIGH_WATER && !this.done) this.io.pauseReads();
  }

  onWritten(): void {
    if (this.exchange) this.exchange.onClientDrain();
    else this.pump();
  }

  get writing(): boolean {
    return this.io.pending > 0;
  }

  private readonly onError = () => {};

  private readonly onClose = () => {
    this.ctx.registry.delete(this);
    const ex = this.exchange;
    this.exchange = null;
    this.done = true;
    ex?.clientGone();
  };

  /**
   * Frames the next request when none is in flight; re-entrant calls loop instead of recursing. `now`:
   * performance.now() when the caller read the clock already.
   */
  private pump(now?: number): void {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    do {
      this.again = false;
      this.next(now);
    } while (this.again);
    this.pumping = false;
  }

  private next(now: number | undefined): void {
    if (this.done || this.exchange || this.buf === null || this.socket.destroyed) return;
    // A client that pipelines without reading its answers waits until it has read them.
    if (this.io.needDrain) return;
    const buf = this.buf;
    const max = this.ctx.maxHeaderSize;
    // A head that came whole, looked at for the first time: checked on its bytes, with no search for its end
    // first. Anything else (a head still arriving, or one the byte path leaves) is searched for, and a head
    // that came in pieces goes the string path: scanning it at every piece would be quadratic.
    const whole = this.scanned === 0 ? scanRequestHead(buf) : null;
    let head: RequestHead | BytesRequestHead;
    let end: number;
    if (whole !== null && whole.end + 4 <= max) {
      head = whole;
      end = whole.end;
    } else {
      end = buf.indexOf(HEAD_END, Math.max(0, this.scanned - 3));
      if (end < 0) {
        const from = this.scanned;
        this.scanned = buf.length;
        if (buf.length > max) this.refuse(431, 'Request Header Fields Too Large');
        // A bare LF would never end the head here; node:http judges it (and answers 400).
        else if (hasBareLf(buf, from)) this.handOver();
        return;
      }
      this.scanned = 0;
      if (end + 4 > max) {
        this.refuse(431, 'Request Header Fields Too Large');
        return;
      }
      const parsed = parseRequestHead(buf.toString('latin1', 0, end));
      if (!parsed.fast) {
        if (parsed.refuse) this.refuse(400, 'Bad Request');
        else this.handOver();
        return;
      }
      head = parsed.head;
    }
    this.buf = end + 4 < buf.length ? buf.subarray(end + 4) : null;
    this.deadlineKind = NO_DEADLINE;
    this.exchange = new FastExchange(this, this.ctx.deps, this.ctx.state(), head, now ?? performance.now());
    this.exchange.start();
  }

  /** Takes up to `max` buffered bytes (request body); resumes reading once the buffer is low again. */
  take(max: number): Buffer | null {
    const buf = this.buf;
    if (buf === null) return null;
    let out: Buffer;
    if (buf.length <= max) {
      out = buf;
      this.buf = null;
    } else {
      out = buf.subarray(0, max);
      this.buf = buf.subarray(max);
    }
    if (this.io.readsPaused && (this.buf === null || this.buf.length < HIGH_WATER)) this.io.resumeReads();
    return out;
  }

  write(data: string | Buffer): boolean {
    return this.io.write(data);
  }

  forwardingLines(state: ListenerState): Buffer {
    if (this.forwarding === null || this.forwardingState !== state) {
      this.forwarding = forwardingLines(forwardingOf(state, this.client), undefined);
      this.forwardingState = state;
    }
    return this.forwarding;
  }

  writev(first: Buffer, second: Buffer): boolean {
    return this.io.writev(first, second);
  }

  /** The exchange in flight ended; `keepAlive` false closes the connection after what was written. */
  exchangeDone(keepAlive: boolean, now = performance.now()): void {
    this.exchange = null;
    if (this.done || this.socket.destroyed) return;
    if (!keepAlive || this.closing) {
      this.done = true;
      this.socket.end();
      return;
    }
    this.io.resumeReads();
    this.arm(this.buf === null ? IDLE_DEADLINE : HEADERS_DEADLINE, now);
    this.pump(now);
  }

  /** Timeouts, checked by the registry's sweep. */
  tick(now: number): void {
    if (this.exchange) {
      this.exchange.tick(now);
      return;
    }
    if (this.deadlineKind === NO_DEADLINE || now < this.deadline || this.done) return;
    if (this.deadlineKind === IDLE_DEADLINE) {
      this.done = true;
      this.socket.destroy();
      return;
    }
    this.refuse(408, 'Request Timeout');
  }

  /** Closes an idle connection now, a busy one after its response (drain). */
  closeIdle(): void {
    this.closing = true;
    if (this.exchange === null && !this.done) {
      this.done = true;
      this.socket.destroy();
    }
  }

  private refuse(code: number, reason: string): void {
    this.done = true;
    this.buf = null;
    this.ctx.deps.metrics.clientErrors.labels(this.ctx.state().config.id, String(code)).inc();
    this.socket.end(`HTTP/1.1 ${code} ${reason}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
  }

  private handOver(): void {
    this.done = true;
    const s = this.socket;
    s.removeListener('error', this.onError);
    s.removeListener('close', this.onClose);
    this.ctx.registry.delete(this);
    this.io.releaseReads();
    // Back into the socket's read buffer, as readProxyHeader leaves what follows the PROXY header.
    if (this.buf !== null) s.unshift(this.buf);
    this.buf = null;
    this.ctx.handOver(s);
    if (s.isPaused()) s.resume();
  }
}

function hasBareLf(buf: Buffer, from: number): boolean {
  for (let i = buf.indexOf(10, from); i >= 0; i = buf.indexOf(10, i + 1)) if (i === 0 || buf[i - 1] !== 13) return true;
  return false;
}

/**
 * A listener's fast connections: timeouts are swept twice a second rather than timed one by one. The sweep
 * runs only while there are connections (it stops at the first tick that finds none), so a node's thousands
 * of idle listeners hold no timer.
 */
export class FastConnections {
  private readonly conns = new Set<FastConnection>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly sweepMs = 500) {}

  add(c: FastConnection): void {
    this.conns.add(c);
    if (this.sweeper !== undefined) return;
    this.sweeper = setInterval(() => {
      if (this.conns.size === 0) {
        this.stopSweeping();
        return;
      }
      const now = performance.now();
      for (const c of this.conns) c.tick(now);
    }, this.sweepMs);
    this.sweeper.unref();
  }

  delete(c: FastConnection): void {
    this.conns.delete(c);
  }

  /** Whether the sweep runs (for tests). */
  get sweeping(): boolean {
    return this.sweeper !== undefined;
  }

  private stopSweeping(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  closeIdle(): void {
    for (const c of this.conns) c.closeIdle();
  }

  close(): void {
    this.stopSweeping();
    for (const c of this.conns) c.socket.destroy();
    this.conns.clear();
  }
}
