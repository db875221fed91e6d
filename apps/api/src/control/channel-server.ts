import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { CONTROL_CHANNEL_PATH, NODE_MESSAGE_MAX_BYTES } from '@slb/model';
import type { FastifyInstance } from 'fastify';
import { WebSocketServer } from 'ws';
import type { ControlHub } from './hub.js';
import { identityOf } from './node-credentials.js';
import type { UpgradeGuard } from './upgrade-guard.js';

export function bearerOf(header: string | undefined): string | null {
  return (header && /^Bearer\s+(\S+)$/i.exec(header)?.[1]) || null;
}

function sameSecret(presented: string, expected: string | undefined): boolean {
  if (!expected) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface ChannelServerOptions {
  /** The legacy shared token, accepted only while the operator migrates (SLB_LEGACY_NODE_TOKEN=1). */
  legacyToken?: string;
  guard: UpgradeGuard;
}

/**
 * Accepts node connections on the API's own port: an HTTP upgrade on CONTROL_CHANNEL_PATH carrying
 * `Authorization: Bearer <the node's credential>`, which says who the node is. A wrong one gets a 401, and
 * too many attempts from one address a 429, before any WebSocket exists.
 */
export function installChannelServer(app: FastifyInstance, hub: ControlHub, options: ChannelServerOptions): void {
  // Nodes send hellos, heartbeats, acks and nacks, each bounded (a hello by its VIPs, an ack or heartbeat by
  // REPORT_MAX_BYTES, a nack's reason at 2,000 characters): a message past this is not one of them, and is
  // refused before it is buffered (CONTROL_CHANNEL_MAX_BYTES bounds the snapshots sent).
  const wss = new WebSocketServer({ noServer: true, maxPayload: NODE_MESSAGE_MAX_BYTES });
  const refuse = (socket: Duplex, status: number, text: string) => {
    socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  };
  const upgrade = async (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== CONTROL_CHANNEL_PATH) return refuse(socket, 404, 'Not Found');
    const remote = request.socket.remoteAddress ?? 'unknown';
    const secret = bearerOf(request.headers.authorization);
    const identity = secret ? await identityOf(app.data, secret) : null;
    // The socket may have gone while the credential was looked up.
    if (socket.destroyed) return;
    const legacy = identity === null && secret !== null && sameSecret(secret, options.legacyToken);
    if (!identity && !legacy) {
      // Failures count against the address (then 429, logged once per burst); a good credential is limited
      // per node instead, so a guesser, or a deleted node still retrying, never locks out the real nodes
      // behind the same address (the local cloud's all dial from 127.0.0.1).
      if (options.guard.admit(remote) !== 'ok') return refuse(socket, 429, 'Too Many Requests');
      options.guard.failed(remote, 'unknown or revoked node credential');
      return refuse(socket, 401, 'Unauthorized');
    }
    if (options.guard.admit(identity ? `node:${identity.nodeId}` : `legacy:${remote}`) !== 'ok') {
      return refuse(socket, 429, 'Too Many Requests');
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      // A broken frame (unmasked, bad opcode, oversized…) is emitted as 'error' and ws closes the socket;
      // without a listener it would be an uncaught exception that takes the whole API down.
      ws.on('error', (err) =>
        app.log.warn({ remote, code: (err as { code?: string }).code }, 'control channel closed: protocol error'),
      );
      hub.attach(ws, identity ?? undefined);
    });
  };
  app.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    upgrade(request, socket, head).catch((err: Error) => {
      // The database did not answer: the node retries, as after any refused dial.
      app.log.warn({ err: err.message }, 'control channel upgrade failed');
      if (!socket.destroyed) refuse(socket, 503, 'Service Unavailable');
    });
  });
  app.addHook('onClose', async () => {
    hub.close();
    for (const client of wss.clients) client.terminate();
    wss.close();
  });
}
