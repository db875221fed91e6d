import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { requestHeadersToBackend, serializeHead } from './headers.js';
import type { ClientInfo, ListenerState, ProxyDeps } from './proxy.js';
import { matchRoute, normalizeHost } from './rules.js';
import type { Backend } from './server-group.js';

// WebSocket and other Upgrade requests: the request head goes to a backend on a fresh raw connection,
// then bytes are piped both ways untouched (the backend's 101 included). A backend that refuses the
// connection is replaced by another before anything is written to the client.

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
  const host = normalizeHost(req.headers.host);
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const route = matchRoute(state.rules, cfg.defaultServerGroupId, host, q < 0 ? url : url.slice(0, q));
  const group = route ? state.groups.get(route.serverGroupId) : undefined;
  const log = (status: number | string, backend: string) =>
    deps.logger.info(
      {
        listener: cfg.id,
        client: client.address,
        method: req.method,
        host,
        path: url,
        upgrade: req.headers.upgrade,
        status,
        backend,
      },
      'access',
    );
  clientSocket.on('error', () => {});
  // A WebSocket may idle for long; the listener's keep-alive idle timer is for HTTP requests only.
  (clientSocket as Socket).setTimeout?.(0);
  if (!group) {
    clientSocket.end(rawResponse(404, 'Not Found'));
    log(404, 'none');
    return;
  }
  const headers = requestHeadersToBackend(
    req.rawHeaders,
    {
      clientAddress: client.address,
      proto: cfg.protocol,
      frontendPort: client.frontendPort,
      appendXff: cfg.xForwardedFor,
    },
    true,
  );
  const headText = serializeHead(`${req.method} ${url} HTTP/1.1`, headers);

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
    const onConnectError = () => {
      deps.metrics.connectFailures.labels(group.id, b.serverId).inc();
      if (group.connectFailed(b)) deps.metrics.ejections.labels(group.id, b.serverId).inc();
      if (clientSocket.destroyed) return;
      tryNext();
    };
    upstream.once('error', onConnectError);
    upstream.once('connect', () => {
      upstream.removeListener('error', onConnectError);
      group.succeeded(b);
      b.state.active++;
      upstream.once('close', () => b.state.active--);
      log('upgrade', b.serverId);
      upstream.setNoDelay(true);
      upstream.write(headText);
      if (head.length > 0) upstream.write(head);
      upstream.on('error', () => clientSocket.destroy());
      clientSocket.on('error', () => upstream.destroy());
      upstream.on('close', () => clientSocket.destroy());
      clientSocket.on('close', () => upstream.destroy());
      upstream.pipe(clientSocket);
      clientSocket.pipe(upstream);
    });
  };
  tryNext();
}
