import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { hasBody, requestHeadersToBackend, responseHeadersToClient, serializeHead } from './headers.js';
import { parseResponseHead, type ResponseHead } from './http1-parser.js';
import { type NodeAnswer, problemBody, rawProblem } from './problem.js';
import {
  afterFailedAttempt,
  beginRequest,
  forwardingOf,
  nextBackend,
  recordConnectFailure,
  requestEnded,
  responseStarted,
  stickyOnResponse,
} from './request-flow.js';
import type { ClientInfo, ListenerState, ProxyDeps, RetryState } from './request-types.js';
import { ResponseFraming } from './response-framing.js';
import type { Backend } from './server-group.js';
import { switchesProtocols } from './upgrade-response.js';

// WebSocket and other Upgrade requests: routed, stuck, retried, counted and logged by request-flow.ts as
// every other request; then the request head goes to the backend on a fresh raw connection, and the
// connection becomes a tunnel only once the backend switched protocols (a 101 matching the request).
// Until then the client's bytes wait unread; any other answer is relayed as an ordinary response and the
// connection closes after it. A backend that refuses the connection, or does not take it within the
// connect timeout, is replaced by another before anything is written to the client. The request ends
// (counted, logged) when its answer goes out: a tunnel's lifetime is the connection's, not the request's.

const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
/** Largest backend response head accepted, bytes (as on the fast path). */
const MAX_RESPONSE_HEAD = 64 * 1024;

/** `head` (a response head and what followed it, the head ending at `end`) with `extra` header lines added. */
function withHeaders(head: Buffer, end: number, extra: readonly string[]): Buffer {
  if (extra.length === 0) return head;
  let lines = '';
  for (let i = 0; i < extra.length; i += 2) lines += `\r\n${extra[i]}: ${extra[i + 1]}`;
  return Buffer.concat([head.subarray(0, end), Buffer.from(lines, 'latin1'), head.subarray(end)]);
}

export function handleUpgrade(
  deps: ProxyDeps,
  state: ListenerState,
  client: ClientInfo,
  req: IncomingMessage,
  clientSocket: Duplex,
  head: Buffer,
): void {
  const { started, method, target, url, host, path, route, group } = beginRequest(deps, state, req);
  const cfg = state.config;
  let backend: Backend | null = null;
  let attempts = 0;
  let finished = false;
  const retry: RetryState = { retrySlot: false };

  /** The request's end, counted and logged once (the query string stays out: it often carries tokens). */
  const finish = (status: number, answer: NodeAnswer | null, aborted = false) => {
    if (finished) return;
    finished = true;
    if (retry.retrySlot) state.budget.retryEnded();
    requestEnded(deps, state, {
      client: client.address,
      method,
      host,
      path,
      status,
      backend,
      ruleId: route?.ruleId ?? null,
      attempts,
      started,
      answer,
      aborted,
      upgrade: req.headers.upgrade,
    });
  };
  /** The node's own answer; the connection closes after it. */
  const fail = (answer: NodeAnswer) => {
    if (finished) return;
    clientSocket.end(rawProblem(answer, true));
    finish(problemBody(answer).status, answer);
  };

  clientSocket.on('error', () => {});
  // Gone before its answer: the request ends there, as an aborted one on the other paths.
  clientSocket.once('close', () => finish(200, null, true));
  // A WebSocket may idle for long; the listener's keep-alive idle timer is for HTTP requests only.
  (clientSocket as Socket).setTimeout?.(0);
  // The client's bytes wait until the backend switched protocols.
  clientSocket.pause();
  const headers = target === null ? null : requestHeadersToBackend(req.rawHeaders, forwardingOf(state, client), true);
  // A body would wait behind the unread client bytes until the backend answered: refused rather than stuck.
  if (headers === null || hasBody(req.headers['transfer-encoding'], req.headers['content-length'])) {
    deps.metrics.clientErrors.labels(cfg.id, '400').inc();
    fail('bad-request');
    return;
  }
  if (!route || !group) {
    fail('no-route');
    return;
  }
  const headText = serializeHead(`${method} ${url} HTTP/1.1`, headers);

  const tried = new Set<Backend>();
  const attempt = () => {
    const choice = nextBackend(deps, state, group, req.headers.cookie, tried);
    if (!choice) {
      fail(tried.size === 0 ? 'no-backend' : 'backend-failed');
      return;
    }
    const b = choice.backend;
    backend = b;
    attempts++;
    const dispatchStarted = performance.now();
    const upstream: Socket = connect({ host: b.address, port: b.port });
    let settled = false;
    const connectFailed = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      upstream.destroy();
      recordConnectFailure(deps, group, b);
      if (finished || clientSocket.destroyed) return;
      const verdict = afterFailedAttempt(deps, state, { kind: 'connect-failed' }, method, attempts, false, retry);
      if (verdict !== null) fail(verdict);
      else attempt();
    };
    const timer = setTimeout(connectFailed, deps.connectTimeoutMs);
    upstream.once('error', connectFailed);
    upstream.once('connect', () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      upstream.removeListener('error', connectFailed);
      upstream.on('error', () => {});
      if (finished) {
        upstream.destroy();
        return;
      }
      group.succeeded(b);
      b.state.active++;
      upstream.once('close', () => b.state.active--);
      upstream.setNoDelay(true);
      clientSocket.on('close', () => upstream.destroy());
      upstream.write(headText);
      awaitAnswer(upstream, b, choice.stuck, dispatchStarted);
    });
  };

  /** Reads the backend's answer: a matching 101 opens the tunnel, anything else is relayed and ends it. */
  const awaitAnswer = (upstream: Socket, b: Backend, stuck: boolean, dispatchStarted: number) => {
    let buf: Buffer | null = null;
    const stop = () => {
      clearTimeout(deadline);
      upstream.removeListener('data', onData);
      upstream.removeListener('close', onClose);
    };
    const deadline = setTimeout(() => {
      stop();
      fail('backend-timeout');
      upstream.destroy();
    }, cfg.requestTimeout * 1000);
    const refuse = (why: string) => {
      stop();
      upstream.destroy();
      if (finished) return;
      deps.logger.warn({ backend: b.serverId, why }, 'backend upgrade response refused');
      fail('backend-failed');
    };
    const onClose = () => refuse('closed before answering');
    upstream.once('close', onClose);
    const onData = (chunk: Buffer) => {
      buf = buf === null ? chunk : Buffer.concat([buf, chunk]);
      for (;;) {
        const end = buf.indexOf(HEAD_END);
        if (end < 0) {
          if (buf.length > MAX_RESPONSE_HEAD) refuse('response head too large');
          return;
        }
        const parsed = parseResponseHead(buf.toString('latin1', 0, end));
        if (parsed === null) return refuse('malformed response head');
        if (parsed.status >= 200 || parsed.status === 101) {
          if (parsed.status === 101 && !switchesProtocols(req.headers.upgrade, parsed))
            return refuse('101 does not match the upgrade asked for');
          stop();
          answered(upstream, b, stuck, dispatchStarted, parsed, buf, end);
          return;
        }
        // An interim answer (100, 103): passed on, the final one is still to come.
        clientSocket.write(
          serializeHead(`HTTP/1.1 ${parsed.status} ${parsed.reason}`, responseHeadersToClient(parsed.headers).headers),
        );
        buf = buf.subarray(end + 4);
      }
    };
    upstream.on('data', onData);
  };

  /** The backend's final answer: the request ends here; a 101 opens the tunnel, anything else is relayed. */
  const answered = (
    upstream: Socket,
    b: Backend,
    stuck: boolean,
    dispatchStarted: number,
    p: ResponseHead,
    buf: Buffer,
    headEnd: number,
  ) => {
    responseStarted(deps, state, group, b, dispatchStarted);
    if (p.status === 101) {
      // The 101 goes out as the backend wrote it (its Connection and Upgrade are the point), plus the
      // sticky cookie of an insert-mode listener.
      const extra: string[] = [];
      stickyOnResponse(state, b, stuck, responseHeadersToClient(p.headers).setCookies, extra);
      finish(101, null);
      tunnel(upstream, withHeaders(buf, headEnd, extra));
      return;
    }
    finish(p.status, null);
    relay(upstream, p, buf, headEnd + 4, b, stuck);
  };

  const tunnel = (upstream: Socket, answer: Buffer) => {
    upstream.on('close', () => clientSocket.destroy());
    clientSocket.on('error', () => upstream.destroy());
    clientSocket.write(answer);
    if (head.length > 0) upstream.write(head);
    upstream.pipe(clientSocket);
    clientSocket.pipe(upstream);
    clientSocket.resume();
  };

  /** An ordinary response to the upgrade request: framed as any other, then the connection closes. */
  const relay = (upstream: Socket, p: ResponseHead, buf: Buffer, bodyStart: number, b: Backend, stuck: boolean) => {
    const { headers: out, setCookies } = responseHeadersToClient(p.headers, true);
    stickyOnResponse(state, b, stuck, setCookies, out);
    const framing = new ResponseFraming(method, p);
    framing.addHeaders(out);
    out.push('connection', 'close');
    clientSocket.write(serializeHead(`HTTP/1.1 ${p.status} ${p.reason}`, out), 'latin1');
    const forward = (chunk: Buffer, from: number) => {
      const take = framing.take(chunk, from);
      if (take < 0) {
        clientSocket.destroy();
        return;
      }
      if (take > 0 && !clientSocket.write(chunk.subarray(from, from + take))) {
        upstream.pause();
        clientSocket.once('drain', () => upstream.resume());
      }
      if (framing.complete) {
        upstream.removeAllListeners('data');
        clientSocket.end();
        upstream.destroy();
      }
    };
    // The body ends at the backend's EOF, or was cut short by it.
    upstream.once('close', () => {
      if (framing.kind === 'close') clientSocket.end();
      else if (!framing.complete) clientSocket.destroy();
    });
    forward(buf, bodyStart);
    if (!framing.complete) upstream.on('data', (c: Buffer) => forward(c, 0));
  };
  attempt();
}
