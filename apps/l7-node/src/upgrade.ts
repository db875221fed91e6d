import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { hasBody, requestHeadersToBackend, responseHeadersToClient, serializeHead, xffModeOf } from './headers.js';
import { parseResponseHead, type ResponseHead } from './http1-parser.js';
import type { ClientInfo, ListenerState, ProxyDeps } from './proxy.js';
import { originFormTarget } from './request-target.js';
import { ResponseFraming } from './response-framing.js';
import { matchRoute, normalizeHost } from './rules.js';
import type { Backend } from './server-group.js';
import { switchesProtocols } from './upgrade-response.js';

// WebSocket and other Upgrade requests: the request head goes to a backend on a fresh raw connection, and
// the connection becomes a tunnel only once the backend switched protocols (a 101 matching the request).
// Until then the client's bytes wait unread; any other answer is relayed as an ordinary response and the
// connection closes after it. A backend that refuses the connection, or does not take it within the
// connect timeout, is replaced by another before anything is written to the client.

const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
/** Largest backend response head accepted, bytes (as on the fast path). */
const MAX_RESPONSE_HEAD = 64 * 1024;

function rawResponse(status: number, reason: string): string {
  const body = `${status} ${reason}\n`;
  return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`;
}

export function handleUpgrade(
  deps: ProxyDeps,
  state: ListenerState,
  client: ClientInfo,
  req: IncomingMessage,
  clientSocket: Duplex,
  head: Buffer,
): void {
  const cfg = state.config;
  const method = req.method ?? 'GET';
  const host = normalizeHost(req.headers.host);
  const target = originFormTarget(method, req.url ?? '/', req.headers.host);
  const url = target ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  // The query string stays out of the log: it often carries tokens (WebSocket auth in particular).
  const log = (status: number | string, backend: string) =>
    deps.logger.info(
      { listener: cfg.id, client: client.address, method, host, path, upgrade: req.headers.upgrade, status, backend },
      'access',
    );
  clientSocket.on('error', () => {});
  // A WebSocket may idle for long; the listener's keep-alive idle timer is for HTTP requests only.
  (clientSocket as Socket).setTimeout?.(0);
  // The client's bytes wait until the backend switched protocols.
  clientSocket.pause();
  const headers =
    target === null
      ? null
      : requestHeadersToBackend(
          req.rawHeaders,
          {
            clientAddress: client.address,
            proto: cfg.protocol,
            frontendPort: client.frontendPort,
            xff: xffModeOf(cfg),
          },
          true,
        );
  // A body would wait behind the unread client bytes until the backend answered: refused rather than stuck.
  if (headers === null || hasBody(req.headers['transfer-encoding'], req.headers['content-length'])) {
    deps.metrics.clientErrors.labels(cfg.id, '400').inc();
    clientSocket.end(rawResponse(400, 'Bad Request'));
    log(400, 'none');
    return;
  }
  const route = matchRoute(state.rules, cfg.defaultServerGroupId, host, path);
  const group = route ? state.groups.get(route.serverGroupId) : undefined;
  if (!group) {
    clientSocket.end(rawResponse(404, 'Not Found'));
    log(404, 'none');
    return;
  }
  const headText = serializeHead(`${method} ${url} HTTP/1.1`, headers);

  const tried = new Set<Backend>();
  const tryNext = () => {
    const b = group.pick(tried);
    if (!b || tried.size >= deps.maxAttempts) {
      clientSocket.end(
        rawResponse(tried.size === 0 ? 503 : 502, tried.size === 0 ? 'Service Unavailable' : 'Bad Gateway'),
      );
      log(tried.size === 0 ? 503 : 502, b?.serverId ?? 'none');
      return;
    }
    if (tried.size === 0 && group.failOpen) deps.metrics.failOpen.labels(group.id).inc();
    tried.add(b);
    const upstream: Socket = connect({ host: b.address, port: b.port });
    let settled = false;
    const connectFailed = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      upstream.destroy();
      deps.metrics.connectFailures.labels(group.id, b.serverId).inc();
      if (group.connectFailed(b)) deps.metrics.ejections.labels(group.id, b.serverId).inc();
      if (clientSocket.destroyed) return;
      tryNext();
    };
    const timer = setTimeout(connectFailed, deps.connectTimeoutMs);
    upstream.once('error', connectFailed);
    upstream.once('connect', () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      upstream.removeListener('error', connectFailed);
      group.succeeded(b);
      b.state.active++;
      upstream.once('close', () => b.state.active--);
      upstream.setNoDelay(true);
      upstream.on('error', () => {});
      clientSocket.on('close', () => upstream.destroy());
      upstream.write(headText);
      awaitAnswer(upstream, b);
    });
  };

  /** Reads the backend's answer: a matching 101 opens the tunnel, anything else is relayed and ends it. */
  const awaitAnswer = (upstream: Socket, b: Backend) => {
    let buf: Buffer | null = null;
    const stop = () => {
      clearTimeout(deadline);
      upstream.removeListener('data', onData);
      upstream.removeListener('close', onClose);
    };
    const deadline = setTimeout(() => {
      stop();
      clientSocket.end(rawResponse(504, 'Gateway Timeout'));
      upstream.destroy();
      log(504, b.serverId);
    }, cfg.requestTimeout * 1000);
    const refuse = (why: string) => {
      stop();
      deps.logger.warn({ backend: b.serverId, why }, 'backend upgrade response refused');
      clientSocket.end(rawResponse(502, 'Bad Gateway'));
      upstream.destroy();
      log(502, b.serverId);
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
        if (parsed.status === 101) {
          if (!switchesProtocols(req.headers.upgrade, parsed))
            return refuse('101 does not match the upgrade asked for');
          stop();
          log(101, b.serverId);
          tunnel(upstream, buf);
          return;
        }
        if (parsed.status >= 200) {
          stop();
          log(parsed.status, b.serverId);
          relay(upstream, parsed, buf, end + 4);
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
  const relay = (upstream: Socket, p: ResponseHead, buf: Buffer, bodyStart: number) => {
    const { headers: out } = responseHeadersToClient(p.headers, true);
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
  tryNext();
}
