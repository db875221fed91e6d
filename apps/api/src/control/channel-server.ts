import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { CONTROL_CHANNEL_MAX_BYTES, CONTROL_CHANNEL_PATH } from '@slb/model';
import type { FastifyInstance } from 'fastify';
import { WebSocketServer } from 'ws';
import type { ControlHub } from './hub.js';

function tokenMatches(header: string | undefined, expected: string | undefined): boolean {
  if (!expected || !header) return false;
  const presented = /^Bearer\s+(\S+)$/i.exec(header)?.[1];
  if (!presented) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Accepts node connections on the API's own port: an HTTP upgrade on CONTROL_CHANNEL_PATH carrying
 * `Authorization: Bearer $SLB_NODE_TOKEN`. A wrong token gets a 401 before any WebSocket exists.
 */
export function installChannelServer(app: FastifyInstance, hub: ControlHub, nodeToken: string | undefined): void {
  const wss = new WebSocketServer({ noServer: true, maxPayload: CONTROL_CHANNEL_MAX_BYTES });
  const refuse = (socket: Duplex, status: number, text: string) => {
    socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  };
  app.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== CONTROL_CHANNEL_PATH) return refuse(socket, 404, 'Not Found');
    if (!tokenMatches(request.headers.authorization, nodeToken)) {
      app.log.warn({ remote: request.socket.remoteAddress }, 'control channel refused: wrong or missing node token');
      return refuse(socket, 401, 'Unauthorized');
    }
    wss.handleUpgrade(request, socket, head, (ws) => hub.attach(ws));
  });
  app.addHook('onClose', async () => {
    hub.close();
    for (const client of wss.clients) client.terminate();
    wss.close();
  });
}
