// Test helpers: real servers on 127.0.0.1 port 0, and a look at the kernel's TCP table.
import dgram from 'node:dgram';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import type { Server as NetServer, Socket } from 'node:net';
import net from 'node:net';

const openSockets = new WeakMap<NetServer, Set<Socket>>();

/**
 * Starts listening on 127.0.0.1, an ephemeral port; returns the port. Every accepted socket gets an error
 * listener (probes reset connections, which the server side reads as ECONNRESET) and is destroyed by
 * {@link close}, so a server never outlives its test.
 */
export async function listen(server: NetServer): Promise<number> {
  const sockets = new Set<Socket>();
  openSockets.set(server, sockets);
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export async function close(server: NetServer): Promise<void> {
  for (const socket of openSockets.get(server) ?? []) socket.destroy();
  if (!server.listening) return;
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** A port on 127.0.0.1 that was free a moment ago and has no listener now (connects are refused). */
export async function closedTcpPort(): Promise<number> {
  const server = net.createServer();
  const port = await listen(server);
  await close(server);
  return port;
}

/** Same for UDP: bound, then closed, so datagrams to it draw an ICMP port-unreachable. */
export async function closedUdpPort(): Promise<number> {
  const socket = dgram.createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  const port = socket.address().port;
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

/** Collects the server side of every accepted connection, with its fate. */
export function trackConnections(server: NetServer): {
  sockets: Socket[];
  closed: Promise<void>[];
  errors: string[];
  /** Each accepted connection's client port, as it was on accept. */
  peerPorts: number[];
} {
  const tracked = {
    sockets: [] as Socket[],
    closed: [] as Promise<void>[],
    errors: [] as string[],
    peerPorts: [] as number[],
  };
  server.on('connection', (socket: Socket) => {
    tracked.sockets.push(socket);
    // Read now: a socket that has closed no longer knows its peer.
    if (socket.remotePort !== undefined) tracked.peerPorts.push(socket.remotePort);
    socket.on('error', (err: NodeJS.ErrnoException) => tracked.errors.push(err.code ?? err.message));
    // Not events.once: it would reject on the 'error' that precedes 'close' after a reset.
    tracked.closed.push(new Promise<void>((resolve) => socket.once('close', () => resolve())));
  });
  return tracked;
}

/** Rejects when `promise` takes longer than `ms`: awaited events must not hang a test. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms}ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const TCP_STATES: Record<string, string> = {
  '01': 'ESTABLISHED',
  '02': 'SYN_SENT',
  '03': 'SYN_RECV',
  '04': 'FIN_WAIT1',
  '05': 'FIN_WAIT2',
  '06': 'TIME_WAIT',
  '07': 'CLOSE',
  '08': 'CLOSE_WAIT',
  '09': 'LAST_ACK',
  '0A': 'LISTEN',
  '0B': 'CLOSING',
};

/** Whether the kernel's TCP table can be read (Linux). */
export function canReadTcpTable(): boolean {
  try {
    readFileSync('/proc/net/tcp', 'utf8');
    return true;
  } catch {
    return false;
  }
}

/**
 * States of every IPv4 TCP socket with `port` at either end, except the listener itself; with `peerPort`,
 * only the connection between the two ports. A port handed out by listen(0) may have been some other
 * connection's source port a moment ago, and its TIME_WAIT entries would otherwise count here.
 */
export function tcpStatesOnPort(port: number, peerPort?: number): string[] {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  const peerHex = peerPort?.toString(16).toUpperCase().padStart(4, '0');
  const states: string[] = [];
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    const local = fields[1];
    const remote = fields[2];
    const state = fields[3];
    if (local === undefined || remote === undefined || state === undefined) continue;
    if (!local.endsWith(`:${hex}`) && !remote.endsWith(`:${hex}`)) continue;
    if (peerHex !== undefined && !local.endsWith(`:${peerHex}`) && !remote.endsWith(`:${peerHex}`)) continue;
    const name = TCP_STATES[state] ?? state;
    if (name !== 'LISTEN') states.push(name);
  }
  return states;
}

// Self-signed, test-only certificate for CN/SAN `backend.test` (valid until 2126). Never used outside tests.
export const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgIG3QCxmMas1irj9L
7NmCVk6CqYe7OlNlMbA+Ui+qaGihRANCAASdvY5Naw+Q7SMHfae6hFTjKMzZaSw8
m4TXOqliRq/cijes35zXnsh/mcmlSNLTSDlBIYKrR8EWiTtkOlQoAm++
-----END PRIVATE KEY-----
`;

export const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBnTCCAUSgAwIBAgIUfJdIkBj8ei/QXmTPJNPoIjS+jWIwCgYIKoZIzj0EAwIw
FzEVMBMGA1UEAwwMYmFja2VuZC50ZXN0MCAXDTI2MTEzMDA1MTY1MFoYDzIxMjYx
MTA2MDUxNjUwWjAXMRUwEwYDVQQDDAxiYWNrZW5kLnRlc3QwWTATBgcqhkjOPQIB
BggqhkjOPQMBBwNCAASdvY5Naw+Q7SMHfae6hFTjKMzZaSw8m4TXOqliRq/cijes
35zXnsh/mcmlSNLTSDlBIYKrR8EWiTtkOlQoAm++o2wwajAdBgNVHQ4EFgQUCtjN
cqtyLK+zpeVK0FEcC0DaQn0wHwYDVR0jBBgwFoAUCtjNcqtyLK+zpeVK0FEcC0Da
Qn0wDwYDVR0TAQH/BAUwAwEB/zAXBgNVHREEEDAOggxiYWNrZW5kLnRlc3QwCgYI
KoZIzj0EAwIDRwAwRAIgfyCif6HFWFwx2gcmnP2M2sxO8oFb19AFcy3QjGE+76cC
IAIMj7AVjZVq8jkZhW0JRfHR/LCC51JsfZxzt+8Avut6
-----END CERTIFICATE-----
`;

/** A clock whose deadline fires only when the test says so, and whose `now()` the test sets. */
export function manualClock(start = 1000): {
  now: () => number;
  setTimeout: (callback: () => void, ms: number) => unknown;
  clearTimeout: (handle: unknown) => void;
  advance: (ms: number) => void;
  fireDeadline: () => void;
  pending: () => number;
} {
  let time = start;
  const timers = new Map<number, { callback: () => void; ms: number }>();
  let nextId = 1;
  return {
    now: () => time,
    setTimeout: (callback, ms) => {
      const id = nextId++;
      timers.set(id, { callback, ms });
      return id;
    },
    clearTimeout: (handle) => {
      timers.delete(handle as number);
    },
    advance: (ms) => {
      time += ms;
    },
    fireDeadline: () => {
      for (const [id, timer] of [...timers]) {
        timers.delete(id);
        time += timer.ms;
        timer.callback();
      }
    },
    pending: () => timers.size,
  };
}
