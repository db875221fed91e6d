import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyServerOptions } from 'fastify';

/** How long and how many connections the API's HTTP server grants. Every field is optional; see the defaults. */
export interface HttpLimits {
  /** Time a client has to send the whole request head, ms. Default: 10,000. */
  headersTimeoutMs?: number;
  /** Time a client has to send the whole request (head and body, at most 1 MiB), ms. Default: 30,000. */
  requestTimeoutMs?: number;
  /** Idle time after a response before a keep-alive connection is closed, ms. Default: 5,000. */
  keepAliveTimeoutMs?: number;
  /** Open connections (control-channel WebSockets included) before new ones are dropped. Default: 1,000. */
  maxConnections?: number;
  /** Open connections from one client address before its new ones are dropped. Default: 256. */
  maxConnectionsPerAddress?: number;
}

export const HTTP_LIMIT_DEFAULTS = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 1_000,
  maxConnectionsPerAddress: 256,
} as const satisfies Required<HttpLimits>;

type HttpServerOptions = Pick<FastifyServerOptions, 'connectionTimeout' | 'keepAliveTimeout' | 'requestTimeout'> & {
  http: { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number };
};

/**
 * Fastify server options for the limits. Node checks the header and request deadlines on a timer
 * (`connectionsCheckingInterval`, 30 s by default), so a slow client used to hold a connection well past
 * the deadline; the interval is tied to the header timeout so the cut comes within a quarter of it.
 * The socket idle timeout is the request timeout: a connection that sends nothing for that long is no
 * request in progress. WebSockets are not affected: ws clears the socket timeout on upgrade.
 */
export function httpServerOptions(limits: HttpLimits = {}): HttpServerOptions {
  const { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs } = { ...HTTP_LIMIT_DEFAULTS, ...limits };
  // Node refuses a header deadline later than the request deadline.
  const requestTimeout = Math.max(requestTimeoutMs, headersTimeoutMs);
  return {
    connectionTimeout: requestTimeout,
    keepAliveTimeout: keepAliveTimeoutMs,
    requestTimeout,
    http: {
      headersTimeout: headersTimeoutMs,
      requestTimeout,
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(headersTimeoutMs / 4))),
    },
  };
}

/**
 * The connection caps. The total one (on the server object, not in its constructor options) protects the
 * process; on its own, one client could fill it and lock every other tenant and the nodes' control
 * channels out, so each client address also gets a share of it.
 */
export function applyConnectionCap(server: Server, limits: HttpLimits = {}): void {
  server.maxConnections = limits.maxConnections ?? HTTP_LIMIT_DEFAULTS.maxConnections;
  const perAddress = limits.maxConnectionsPerAddress ?? HTTP_LIMIT_DEFAULTS.maxConnectionsPerAddress;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = (socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    const count = (open.get(address) ?? 0) + 1;
    if (count > perAddress) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
  });
}
