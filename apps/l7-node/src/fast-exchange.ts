// Buffer and performance are imported, not taken from globalThis, where each is an accessor (a getter call per use).
import { Buffer } from 'node:buffer';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { putBytes } from './head-bytes.js';
import { isIdempotent, requestHeadersToBackend, responseHeadersToClient, serializeHead, xffModeOf } from './headers.js';
import { parseResponseHead, type RequestHead, type ResponseHead } from './http1-parser.js';
import { type NodeAnswer, problemBody, rawProblem } from './problem.js';
import {
  afterFailedAttempt,
  chooseBackend,
  forwardingOf,
  recordConnectFailure,
  requestEnded,
  requestStarted,
  responseStarted,
  routeRequest,
  stickyOnResponse,
} from './request-flow.js';
import { BytesRequestHead, forwardingLines, writeRequestHead } from './request-head-bytes.js';
import type { ClientInfo, ListenerState, Outcome, ProxyDeps, RetryState, RoutedRequest } from './request-types.js';
import { ResponseFraming } from './response-framing.js';
import { BytesResponseHead, scanResponseHead, writeResponseHead } from './response-head-bytes.js';
import type { Backend } from './server-group.js';
import type { UpstreamConn, UpstreamHandler, Waiter } from './upstream-pool.js';

// One request on the fast path, from its parsed head to the end of its response: routing, attempts and
// retries (request-flow.ts, shared with proxy.ts), the request written to a pooled raw backend socket, and
// the response head parsed strictly, rewritten, and its body forwarded unchanged with backpressure both ways.

/**
 * What an exchange needs from the client connection it runs on. Declared here and implemented by
 * FastConnection (fast-connection.ts), so the connection depends on the exchange and not the other way.
 */
export interface ExchangeClient {
  readonly client: ClientInfo;
  readonly socket: Socket;
  /** The listener is draining: the connection closes after the response in flight. */
  readonly closing: boolean;
  /** Takes up to `max` buffered client bytes (request body); null when none are buffered. */
  take(max: number): Buffer | null;
  /** Writes to the client: true when the kernel took all of it. */
  write(data: string | Buffer): boolean;
  /** Two buffers in one system call. */
  writev(first: Buffer, second: Buffer): boolean;
  /**
   * The node's forwarding lines for this client under `state` (request-head-bytes.ts, forwardingLines),
   * made once per connection and listener state.
   */
  forwardingLines(state: ListenerState): Buffer;
  /** A write to the client waits for the kernel (it may refer to the bytes it was given). */
  readonly writing: boolean;
  /**
   * The exchange ended; `keepAlive` false closes the connection after what was written. `now`:
   * performance.now(), when the exchange read the clock already.
   */
  exchangeDone(keepAlive: boolean, now?: number): void;
}

const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
/** Largest backend response head accepted, bytes. */
const MAX_RESPONSE_HEAD = 64 * 1024;
/**
 * Up to this, a head and the body bytes after it are copied into one buffer; larger bodies go out with the
 * head in one writev instead (copying 16 KiB per response measurably costs throughput).
 */
const SMALL = 4 * 1024;
/** A reused socket that failed before any response byte may just be stale: this many fresh tries, free. */
const STALE_RETRIES = 2;

const NO_BACKENDS: ReadonlySet<Backend> = new Set();

const Phase = { Connecting: 0, AwaitingHead: 1, Body: 2, Done: 3 } as const;

/** A head and the (small) body bytes after it, in one buffer: one allocation and two copies. */
function headWith(head: Buffer, body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(head.length + body.length);
  putBytes(out, putBytes(out, 0, head, 0, head.length), body, 0, body.length);
  return out;
}

export class FastExchange implements UpstreamHandler {
  private readonly routed: RoutedRequest;
  private backend: Backend | null = null;
  private stuck = false;
  private attempts = 0;
  private staleRetries = 0;
  private answer: NodeAnswer | null = null;
  /** The first backend tried; a Set of them only once a retry needs one (most requests make one attempt). */
  private firstTried: Backend | null = null;
  private tried: Set<Backend> | null = null;
  private readonly retry: RetryState = { retrySlot: false };
  /** The request head toward the backend, kept for a retry on another. */
  private headBytes: Buffer | null = null;
  private upstream: UpstreamConn | null = null;
  private waiter: Waiter | null = null;
  /** The attempt holds `backend.state.active`. */
  private attemptOpen = false;
  private dispatchStarted = 0;
  /** When the response head arrived (performance.now()). */
  private headAt = 0;
  private phase: number = Phase.Connecting;
  /** Request body bytes not yet sent to the backend. */
  private bodyLeft: number;
  private bodyConsumed = false;
  private responseHead: Buffer | null = null;
  private responseBytes = false;
  /** Some byte (a 1xx or the final head) went to the client: nothing is retried any more. */
  private clientStarted = false;
  private status = 0;
  private framing: ResponseFraming | null = null;
  private reuseBackend = false;
  private closeClient = false;
  private upstreamPaused = false;
  private timedOut = false;
  private finished = false;
  private readonly deadline: number;

  constructor(
    private readonly conn: ExchangeClient,
    private readonly deps: ProxyDeps,
    private readonly state: ListenerState,
    private readonly head: RequestHead | BytesRequestHead,
    /** performance.now() when the head was read: a request reads the clock once on each side. */
    private readonly started = performance.now(),
  ) {
    this.routed = routeRequest(state, head.host, head.target);
    this.bodyLeft = head.contentLength;
    this.deadline = this.started + state.config.requestTimeout * 1000;
  }

  start(): void {
    requestStarted(this.deps, this.state);
    if (!this.routed.route || !this.routed.group) {
      this.fail('no-route');
      return;
    }
    const h = this.head;
    if (h instanceof BytesRequestHead) {
      const forwarding =
        h.clientXff !== undefined && xffModeOf(this.state.config) === 'append'
          ? forwardingLines(forwardingOf(this.state, this.conn.client), h.clientXff)
          : this.conn.forwardingLines(this.state);
      this.headBytes = writeRequestHead(h, forwarding);
    } else {
      const headers = requestHeadersToBackend(h.headers, forwardingOf(this.state, this.conn.client));
      // The parser refuses these first; kept so no head the shared rules refuse is ever sent.
      if (headers === null) {
        this.fail('bad-request');
        return;
      }
      this.headBytes = Buffer.from(serializeHead(`${h.method} ${h.target} HTTP/1.1`, headers), 'latin1');
    }
    this.attempt(this.started);
  }

  private attempt(now: number): void {
    const group = this.routed.group!;
    const first = this.firstTried;
    if (first !== null) this.tried ??= new Set([first]);
    const choice = chooseBackend(this.state, group, this.head.cookie, this.tried ?? NO_BACKENDS);
    const b = choice.backend;
    if (!b) {
      this.fail(first === null ? 'no-backend' : 'backend-failed');
      return;
    }
    if (first === null && group.failOpen) this.deps.metrics.failOpen.labels(group.id).inc();
    this.backend = b;
    this.stuck = choice.stuck;
    if (first === null) this.firstTried = b;
    else this.tried!.add(b);
    this.attempts++;
    this.dispatch(b, now);
  }

  private dispatch(b: Backend, now: number): void {
    b.state.active++;
    this.attemptOpen = true;
    this.phase = Phase.Connecting;
    this.dispatchStarted = now;
    this.waiter = this.deps.upstream.acquire(b.poolKey, b.address, b.port, this.onConnection, now);
  }

  private readonly onConnection = (up: UpstreamConn | null) => {
    this.waiter = null;
    if (this.finished) {
      up?.release();
      return;
    }
    if (up === null) {
      recordConnectFailure(this.deps, this.routed.group!, this.backend!);
      this.attemptFailed({ kind: 'connect-failed' }, false);
      return;
    }
    this.upstream = up;
    up.handler = this;
    this.responseHead = null;
    this.responseBytes = false;
    this.phase = Phase.AwaitingHead;
    const first = this.bodyLeft > 0 ? this.conn.take(this.bodyLeft) : null;
    const head = this.headBytes!;
    if (first === null) {
      up.io.write(head);
      return;
    }
    this.bodyLeft -= first.length;
    this.bodyConsumed = true;
    const ok = first.length <= SMALL ? up.io.write(headWith(head, first)) : up.io.writev(head, first);
    if (ok) this.pumpBody();
  };

  /** Sends buffered request body bytes while the backend takes them (client data or backend drain). */
  pumpBody(): void {
    const up = this.upstream;
    if (up === null || this.phase === Phase.Connecting || this.phase === Phase.Done) return;
    while (this.bodyLeft > 0 && !up.io.needDrain) {
      const chunk = this.conn.take(this.bodyLeft);
      if (chunk === null) return;
      this.bodyLeft -= chunk.length;
      this.bodyConsumed = true;
      up.io.write(chunk);
    }
  }

  onDrain(): void {
    this.pumpBody();
  }

  /** Backend bytes (in the upstream's read buffer): true while a write of them to the client is pending. */
  onData(chunk: Buffer): boolean {
    if (this.phase === Phase.Body) return this.forwardBody(chunk, 0, null);
    if (this.phase !== Phase.AwaitingHead) return false;
    this.responseBytes = true;
    // A head that came whole in one read, as a backend's usually does: checked on its bytes, with no search for
    // its end first.
    if (this.responseHead === null) {
      const whole = scanResponseHead(chunk);
      if (whole !== null) return this.bytesHeadReady(whole, chunk, whole.end + 4);
    }
    const buf = this.responseHead === null ? chunk : Buffer.concat([this.responseHead, chunk]);
    const end = buf.indexOf(HEAD_END);
    if (end < 0) {
      if (buf.length > MAX_RESPONSE_HEAD) this.badResponse('response head too large');
      // Kept until the rest of the head arrives: a copy, the read buffer takes the next read.
      else this.responseHead = buf === chunk ? Buffer.from(chunk) : buf;
      return false;
    }
    this.responseHead = null;
    // A head that came in pieces is scanned once, now that it is whole (not at every piece: a backend sending
    // it a byte at a time would make that quadratic).
    const pieced = buf === chunk ? null : scanResponseHead(buf);
    if (pieced !== null) return this.bytesHeadReady(pieced, buf, pieced.end + 4);
    const parsed = parseResponseHead(buf.toString('latin1', 0, end));
    if (parsed === null) {
      this.badResponse('malformed response head');
      return false;
    }
    if (parsed.status < 200) {
      // 101 only answers an Upgrade, which never takes the fast path.
      if (parsed.status === 101) {
        this.badResponse('unrequested 101');
        return false;
      }
      this.clientStarted = true;
      this.conn.write(
        serializeHead(`HTTP/1.1 ${parsed.status} ${parsed.reason}`, responseHeadersToClient(parsed.headers).headers),
      );
      return end + 4 < buf.length ? this.onData(buf.subarray(end + 4)) : false;
    }
    return this.responseHeadReady(parsed, buf, end + 4);
  }

  /** A final response head on the string path: parsed, rewritten and serialized as strings. */
  private responseHeadReady(p: ResponseHead, buf: Buffer, bodyStart: number): boolean {
    const { headers, setCookies } = responseHeadersToClient(p.headers, true);
    this.headStarted(p, setCookies, headers);
    return this.forwardBody(
      buf,
      bodyStart,
      Buffer.from(serializeHead(`HTTP/1.1 ${p.status} ${p.reason}`, headers), 'latin1'),
    );
  }

  /** A final response head on the byte path (response-head-bytes.ts): its kept lines are copied, not parsed. */
  private bytesHeadReady(h: BytesResponseHead, buf: Buffer, bodyStart: number): boolean {
    this.headStarted(h, h.setCookies, h.extra);
    return this.forwardBody(buf, bodyStart, h);
  }

  /**
   * What a final response head starts, on either path: passive health and latency, the sticky cookie, the
   * body's framing, whether the client and backend connections are kept; the lines the node adds go to `out`.
   */
  private headStarted(
    p: {
      readonly status: number;
      readonly chunked: boolean;
      readonly contentLength: number;
      readonly keepAlive: boolean;
    },
    setCookies: readonly string[],
    out: string[],
  ): void {
    const b = this.backend!;
    this.headAt = performance.now();
    responseStarted(this.deps, this.state, this.routed.group!, b, this.dispatchStarted, this.headAt);
    stickyOnResponse(this.state, b, this.stuck, setCookies, out);
    const framing = new ResponseFraming(this.head.method, p);
    framing.addHeaders(out);
    this.framing = framing;
    this.reuseBackend = p.keepAlive && framing.kind !== 'close';
    // Unread request body bytes would be taken for the next request: the connection ends with this one.
    this.closeClient = this.head.close || framing.kind === 'close' || this.conn.closing || this.bodyLeft > 0;
    if (this.closeClient) out.push('connection', 'close');
    this.status = p.status;
    this.clientStarted = true;
    this.phase = Phase.Body;
  }

  /**
   * Forwards the response body bytes of `chunk[from..]` (after `head` when given); completes at its end.
   * True while a write to the client is pending (it may refer to `chunk`).
   */
  private forwardBody(chunk: Buffer, from: number, head: Buffer | BytesResponseHead | null): boolean {
    const framing = this.framing!;
    const avail = chunk.length - from;
    const take = framing.take(chunk, from);
    if (take < 0) {
      if (head === null) {
        this.deps.logger.warn({ backend: this.backend?.serverId }, 'bad chunked framing from backend');
        this.cut();
        return false;
      }
      // Nothing went to the client yet: still a clean 502.
      this.clientStarted = false;
      this.status = 0;
      this.phase = Phase.AwaitingHead;
      this.badResponse('bad chunked framing');
      return false;
    }
    const complete = framing.complete;
    // Bytes past the response's end: the backend is out of step, its socket is not reused.
    if (take < avail) this.reuseBackend = false;
    let ok: boolean;
    // A byte-path head takes a small body into its own buffer straight from the read, without a view of it.
    if (head instanceof BytesResponseHead && take <= SMALL)
      ok = this.conn.write(writeResponseHead(head, chunk, from, from + take));
    else {
      const body = take === 0 ? null : from === 0 && take === chunk.length ? chunk : chunk.subarray(from, from + take);
      if (head === null) ok = body === null || this.conn.write(body);
      else if (head instanceof BytesResponseHead) ok = this.conn.writev(writeResponseHead(head, chunk, 0, 0), body!);
      else if (body === null) ok = this.conn.write(head);
      else if (body.length <= SMALL) ok = this.conn.write(headWith(head, body));
      else ok = this.conn.writev(head, body);
    }
    const held = this.conn.writing;
    if (complete) {
      // A response whose end came with its head needs no second clock read.
      this.complete(head === null ? performance.now() : this.headAt);
      return held;
    }
    if (!ok && !this.upstreamPaused) {
      this.upstreamPaused = true;
      this.upstream?.socket.pause();
    }
    return held;
  }

  onClientDrain(): void {
    if (!this.upstreamPaused) return;
    this.upstreamPaused = false;
    this.upstream?.socket.resume();
  }

  onEnd(): void {
    if (this.phase === Phase.Body && this.framing?.kind === 'close') {
      this.complete(performance.now());
      return;
    }
    this.upstreamLost();
  }

  onClose(): void {
    this.upstreamLost();
  }

  /** The backend socket ended or broke before the response was complete. */
  private upstreamLost(): void {
    if (this.finished || this.phase === Phase.Done || this.phase === Phase.Connecting) return;
    if (this.phase === Phase.Body) {
      this.cut();
      return;
    }
    const reused = this.upstream?.reused ?? false;
    if (this.responseBytes) {
      this.attemptFailed({ kind: 'failed', answer: 'backend-failed' }, false);
      return;
    }
    this.attemptFailed({ kind: 'reset-before-response', bodyConsumed: this.bodyConsumed }, reused);
  }

  private badResponse(why: string): void {
    this.deps.logger.warn({ backend: this.backend?.serverId, why }, 'backend response refused');
    this.attemptFailed({ kind: 'failed', answer: 'backend-failed' }, false);
  }

  private endAttempt(keepSocket: boolean, now?: number): void {
    const up = this.upstream;
    this.upstream = null;
    if (up !== null) {
      if (this.upstreamPaused) {
        this.upstreamPaused = false;
        up.socket.resume();
      }
      if (keepSocket) up.release(now);
      else up.discard();
    }
    this.waiter?.cancel();
    this.waiter = null;
    if (this.attemptOpen) {
      this.attemptOpen = false;
      this.backend!.state.active--;
    }
  }

  private attemptFailed(outcome: Exclude<Outcome, { kind: 'done' }>, stale: boolean): void {
    this.endAttempt(false);
    if (this.finished) return;
    if (this.clientStarted) {
      this.cut();
      return;
    }
    if (this.timedOut) {
      this.fail('backend-timeout');
      return;
    }
    // A kept-alive socket the backend had closed says nothing about the backend: the same one is asked
    // again on another socket, as if this attempt never happened.
    if (stale && this.staleRetries < STALE_RETRIES && !this.bodyConsumed && isIdempotent(this.head.method)) {
      this.staleRetries++;
      this.dispatch(this.backend!, performance.now());
      return;
    }
    const verdict = afterFailedAttempt(
      this.deps,
      this.state,
      outcome,
      this.head.method,
      this.attempts,
      this.clientStarted,
      this.retry,
    );
    if (verdict !== null) {
      this.fail(verdict);
      return;
    }
    this.attempt(performance.now());
  }

  private complete(now: number): void {
    this.phase = Phase.Done;
    this.endAttempt(this.reuseBackend && this.bodyLeft === 0, now);
    this.finish(!this.closeClient && this.bodyLeft === 0, false, now);
  }

  /** The response was cut after bytes went to the client: nothing else can be said on this connection. */
  private cut(): void {
    this.phase = Phase.Done;
    this.endAttempt(false);
    this.conn.socket.destroy();
    this.finish(false, true);
  }

  private fail(answer: NodeAnswer): void {
    this.answer = answer;
    this.phase = Phase.Done;
    const close = this.head.close || this.bodyLeft > 0 || this.conn.closing || answer === 'bad-request';
    this.status = problemBody(answer).status;
    this.conn.write(rawProblem(answer, close));
    this.finish(!close, false);
  }

  tick(now: number): void {
    if (this.finished || now < this.deadline) return;
    this.timedOut = true;
    if (this.clientStarted) {
      this.cut();
      return;
    }
    this.endAttempt(false);
    this.fail('backend-timeout');
  }

  clientGone(): void {
    if (this.finished) return;
    this.phase = Phase.Done;
    this.endAttempt(false);
    this.finish(false, true);
  }

  private finish(keepAlive: boolean, aborted: boolean, now?: number): void {
    if (this.finished) return;
    this.finished = true;
    if (this.retry.retrySlot) this.state.budget.retryEnded();
    requestEnded(this.deps, this.state, {
      client: this.conn.client.address,
      method: this.head.method,
      host: this.routed.host,
      path: this.routed.path,
      status: this.status || 200,
      backend: this.backend,
      ruleId: this.routed.route?.ruleId ?? null,
      attempts: this.attempts,
      started: this.started,
      answer: this.answer,
      aborted,
    });
    this.conn.exchangeDone(keepAlive, now);
  }
}
