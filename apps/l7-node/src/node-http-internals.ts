import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';

/**
 * The two places the L7 node leans on node:http and node:tls internals, because its listeners never listen
 * themselves (connections arrive on its own PROXY-protocol servers and are handed over with 'connection'):
 *
 * - a TLS socket's `_parent` is the plain socket it was built over, the key of the client address read
 *   from the PROXY header;
 * - an http.Server starts tracking its connections (what enforces headersTimeout/requestTimeout and makes
 *   closeIdleConnections() work) when it emits 'listening'.
 *
 * Both have held from Node 18 to 24. They are checked at import, so a runtime that changed them stops the
 * node at start with this module named, and `node-http-internals.test.ts` (run on every runtime CI tests)
 * checks the behaviour the node needs from them.
 */

const changed = (what: string) =>
  new Error(`Node.js ${process.version} changed node:http/node:tls internals the L7 node relies on: ${what}`);

/** The plain socket under `socket` (a TLS socket's transport), or `socket` itself. */
export function transportOf(socket: Socket): Socket {
  return (socket as Socket & { _parent?: Socket })._parent ?? socket;
}

/** Whether `server` tracks its connections (node:http keeps them under a symbol of this description). */
function tracksConnections(server: HttpServer | HttpsServer): boolean {
  return Object.getOwnPropertySymbols(server).some(
    (s) => s.description === 'http.server.connections' && (server as unknown as Record<symbol, unknown>)[s] != null,
  );
}

/**
 * Makes a server that never listens track its connections, as listen() would; throws if the runtime no
 * longer does it on 'listening' (timeouts would silently stop being enforced).
 */
export function startConnectionTracking(server: HttpServer | HttpsServer): void {
  server.emit('listening');
  if (!tracksConnections(server)) throw changed("'listening' no longer starts connection tracking");
}

/** Checks both at start on throwaway objects; throws naming what changed. */
export function checkHttpInternals(): void {
  const raw = new Socket();
  const tls = new TLSSocket(raw, { isServer: true });
  const parentKept = transportOf(tls) === raw;
  tls.destroy();
  raw.destroy();
  if (!parentKept) throw changed('a TLS socket no longer keeps the socket it wraps as _parent');
  const server = createHttpServer();
  try {
    startConnectionTracking(server);
  } finally {
    server.close();
  }
}

checkHttpInternals();
