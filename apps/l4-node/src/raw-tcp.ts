import { isIPv6 } from 'node:net';
import {
  loadTcpWrap,
  ReadBuffer,
  type SocketAddress,
  uvError,
  type TcpHandle as WrapHandle,
  type Req as WrapReq,
} from '@slb/node-runtime';

/**
 * TCP sockets on Node's own libuv handle bindings (`tcp_wrap`, `stream_wrap`: what net.Socket is built on),
 * without net.Socket around them. A proxied TCP connection needs a read, a write and a shutdown per direction
 * and nothing of the stream machinery net.Socket adds (readable and writable state, events, timers,
 * nextTicks): on one core that machinery cost more per short connection than the kernel's work, and held a
 * Node proxy at about a third of HAProxy's new connections per second (bench/l4.mjs). Driving the handles
 * directly more than doubles it.
 *
 * The bindings are internal: node-runtime's tcp-wrap.ts loads and checks them at start, and `raw-tcp.test.ts`
 * fails if their behaviour changes.
 */

/** What libuv passes for a read that hit the peer's FIN. */
const UV_EOF = -4095;
/** libuv's "operation canceled" (a pending connect, write or shutdown of a handle being closed). */
const UV_ECANCELED = -125;

/** A new connection's first reads go into a small buffer, so an idle connection holds little memory. */
export const RAW_MIN_BUFFER = 4 * 1024;
/** A read that filled the buffer marks a bulk flow: its next reads get this much room. */
export const RAW_MAX_BUFFER = 128 * 1024;

/**
 * Small read buffers of closed sockets, handed to new ones: at thousands of new connections a second, two
 * fresh 4 KiB allocations per connection kept the garbage collector busy. Bounded: a burst of closes keeps
 * at most this many.
 */
const spareBuffers: Buffer[] = [];
const MAX_SPARE_BUFFERS = 1024;

/** Read buffers waiting for a new socket (for tests and metrics). */
export function spareBufferCount(): number {
  return spareBuffers.length;
}

export type { SocketAddress };

type Req = WrapReq<RawSocket>;
type TcpHandle = WrapHandle<RawSocket>;
const B = loadTcpWrap<RawSocket>();

/** This runtime's tcp_wrap can bind with SO_REUSEPORT (Node ≥ 22.12), so nodes on one host can share a VIP:port. */
export const RAW_TCP_REUSEPORT = B.UV_TCP_REUSEPORT !== undefined;

/**
 * What getpeername() and getsockname() fill in, read back at once. The binding sets `address`, `family` and
 * `port` on the object it is given; on a fresh `{}` each set adds a property (a map transition, through V8's
 * generic lookup): 4,000 of the 6,200 instructions of a getpeername() per accepted connection. On this object
 * the properties are already there, and the sets cost 2,200 (bench/l4-instructions.mjs).
 */
const named: SocketAddress = { address: '', family: '', port: 0 };

/** What owns a socket (a proxied session) hears from it; methods, not events, so a call costs no emit. */
export interface RawSocketEvents {
  /** The connect started by {@link connectRaw} finished: 0, or a negative libuv error code. */
  rawConnected(socket: RawSocket, status: number): void;
  /** The peer's FIN arrived on `socket` (passed on to the other side already). */
  rawEnded(socket: RawSocket): void;
  /** A read, write or shutdown on `socket` failed; the socket is not closed by this. */
  rawFailed(socket: RawSocket, errno: number): void;
  /** `socket` is closed: both directions finished, or {@link RawSocket.close} was called. Called once. */
  rawClosed(socket: RawSocket): void;
}

/**
 * One TCP connection, relaying what it reads into a peer socket: reads go into a {@link ReadBuffer} this
 * socket owns, each is written to the peer at once, and a write that did not complete at once (the peer's
 * kernel buffer is full) stops reading until it has, the backpressure a pipe applies, which also lets the
 * next read reuse the buffer. A FIN is passed on as a shutdown of the peer after what was written before
 * it, and a socket closes once it has both read a FIN and shut down its own sending side.
 */
export class RawSocket {
  events: RawSocketEvents | undefined;
  bytesRead = 0;
  bytesWritten = 0;
  /** The peer's FIN was read. */
  readEnded = false;
  /** Our shutdown (FIN) was sent, after every earlier write. */
  writeEnded = false;
  closed = false;
  private peer: RawSocket | undefined;
  private readonly buf = new ReadBuffer(RAW_MIN_BUFFER, RAW_MAX_BUFFER, spareBuffers.pop());
  /** Writes of this socket's reads to the peer not yet completed (reading waits for 0). */
  private pendingWrites = 0;
  private shutdownStarted = false;

  constructor(readonly handle: TcpHandle) {
    handle.owner = this;
    handle.onread = onRead;
    handle.useUserBuffer(this.buf.current);
  }

  /** Room for the next read (memory held while the connection idles). */
  get bufferSize(): number {
    return this.buf.current.length;
  }

  remoteAddress(): SocketAddress | undefined {
    return this.handle.getpeername(named) === 0
      ? { address: named.address, family: named.family, port: named.port }
      : undefined;
  }

  localAddress(): SocketAddress | undefined {
    return this.handle.getsockname(named) === 0
      ? { address: named.address, family: named.family, port: named.port }
      : undefined;
  }

  /** Starts reading and passing what is read to `peer`. */
  relayTo(peer: RawSocket): void {
    this.peer = peer;
    // Closed already when writing a PROXY header to the peer failed just before.
    if (!this.closed) this.startReading();
  }

  /** Writes bytes of our own (a PROXY protocol header) ahead of anything relayed. */
  write(data: Buffer): void {
    if (this.closed) return;
    const req = new B.WriteWrap();
    req.handle = this.handle;
    req.oncomplete = afterOwnWrite;
    req.socket = this;
    const err = this.handle.writeBuffer(req, data);
    if (err !== 0) {
      this.events?.rawFailed(this, err);
      return;
    }
    this.bytesWritten += data.length;
    if (B.state[B.kLastWriteWasAsync] !== 0) req.buffer = data;
  }

  /** Closes now; what is still queued toward the peer is dropped. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.handle.close();
    this.giveBackBuffer();
    this.events?.rawClosed(this);
  }

  /** Closes with a RST instead of a FIN: the peer learns at once that it was refused, and no TIME_WAIT is left. */
  reset(): void {
    if (this.closed) return;
    this.closed = true;
    // uv_tcp_close_reset refuses a socket that is shutting down, and Node then no longer closes it either.
    if (this.shutdownStarted) this.handle.close();
    else this.handle.reset();
    this.giveBackBuffer();
    this.events?.rawClosed(this);
  }

  /** A closed handle reads no more; unless a write of its bytes is still pending, its buffer is free. */
  private giveBackBuffer(): void {
    const b = this.buf.current;
    if (this.pendingWrites === 0 && b.length === RAW_MIN_BUFFER && spareBuffers.length < MAX_SPARE_BUFFERS) {
      spareBuffers.push(b);
    }
  }

  /** @internal (onRead) `n` bytes arrived in the read buffer. */
  forward(n: number): Buffer | undefined {
    this.bytesRead += n;
    const peer = this.peer;
    if (peer === undefined || peer.closed) return undefined;
    const req = new B.WriteWrap();
    req.handle = peer.handle;
    req.oncomplete = afterRelayWrite;
    req.socket = this;
    const chunk = this.buf.current.subarray(0, n);
    const err = peer.handle.writeBuffer(req, chunk);
    if (err !== 0) {
      this.events?.rawFailed(peer, err);
      return undefined;
    }
    peer.bytesWritten += n;
    if (B.state[B.kLastWriteWasAsync] !== 0) {
      // The write holds the buffer until it completes; no read comes before that, so it can be reused then.
      req.buffer = chunk;
      this.pendingWrites++;
      this.handle.readStop();
    }
    const before = this.buf.current;
    const next = this.buf.afterRead(n, false);
    return next === before ? undefined : next;
  }

  /** @internal (afterRelayWrite) One of this socket's relayed writes completed. */
  relayed(status: number): void {
    this.pendingWrites--;
    if (this.closed) return;
    if (status < 0) {
      if (this.peer !== undefined && status !== UV_ECANCELED) this.events?.rawFailed(this.peer, status);
      return;
    }
    if (this.pendingWrites === 0 && !this.readEnded) this.startReading();
  }

  /** @internal (onRead) The peer's FIN, or a read error. */
  readFailedOrEnded(n: number): void {
    if (n !== UV_EOF) {
      this.events?.rawFailed(this, n);
      return;
    }
    // libuv has stopped reading at the FIN itself (uv__stream_eof), so no readStop() here.
    this.readEnded = true;
    const peer = this.peer;
    if (peer !== undefined) {
      // The peer read its own FIN before, so this FIN ends the connection: with nothing of ours queued toward
      // it, close() sends its FIN after what the kernel still holds, as a shutdown would, without the
      // shutdown call, its request and its callback a loop turn later (HAProxy closes the same way).
      if (peer.readEnded && peer.handle.writeQueueSize === 0) peer.closeAfterFin();
      else peer.shutdownWrite();
    }
    this.events?.rawEnded(this);
    if (this.writeEnded) this.close();
  }

  /** Both ways are done on this socket's side: its FIN goes with the close (see readFailedOrEnded). */
  private closeAfterFin(): void {
    if (this.closed) return;
    this.writeEnded = true;
    this.close();
  }

  /** Sends a FIN once every write queued before it is done (libuv orders the shutdown after them). */
  private shutdownWrite(): void {
    if (this.shutdownStarted || this.closed) return;
    this.shutdownStarted = true;
    const req = new B.ShutdownWrap();
    req.handle = this.handle;
    req.oncomplete = afterShutdown;
    req.socket = this;
    const err = this.handle.shutdown(req);
    // 1: completed synchronously (a stream that has nothing queued, as net.js handles it).
    if (err === 1) this.shutDown(0);
    else if (err !== 0) this.events?.rawFailed(this, err);
  }

  /** @internal (afterShutdown) */
  shutDown(status: number): void {
    if (this.closed) return;
    if (status < 0) {
      this.events?.rawFailed(this, status);
      return;
    }
    this.writeEnded = true;
    if (this.readEnded) this.close();
  }

  /** @internal (afterConnect) */
  connected(status: number): void {
    if (this.closed) return;
    this.events?.rawConnected(this, status);
  }

  private startReading(): void {
    const err = this.handle.readStart();
    if (err !== 0) this.events?.rawFailed(this, err);
  }
}

// Callbacks shared by every socket: the handle or request they are called on leads to the socket, so no
// closure is allocated per connection.

function onRead(this: TcpHandle): Buffer | undefined {
  const socket = this.owner;
  if (socket === undefined || socket.closed) return undefined;
  const n = B.state[B.kReadBytesOrError]!;
  if (n > 0) return socket.forward(n);
  if (n < 0) socket.readFailedOrEnded(n);
  return undefined;
}

function afterRelayWrite(this: Req, status: number): void {
  this.socket!.relayed(status);
}

function afterOwnWrite(this: Req, status: number): void {
  const socket = this.socket!;
  if (status < 0 && status !== UV_ECANCELED && !socket.closed) socket.events?.rawFailed(socket, status);
}

function afterShutdown(this: Req, status: number): void {
  this.socket!.shutDown(status);
}

function afterConnect(this: Req, status: number): void {
  this.socket!.connected(status);
}

/**
 * Opens a connection to `address:port` (an IP literal); `events.rawConnected` follows with the outcome. A
 * connect that fails before it starts (an invalid address) is reported the same way, on the next tick.
 * `localAddress` (an IP literal of this host, same family) is the source address; else the kernel picks.
 */
export function connectRaw(address: string, port: number, events: RawSocketEvents, localAddress?: string): RawSocket {
  const handle = new B.TCP(B.SOCKET);
  // Applied by libuv when the socket is created, before the connect.
  handle.setNoDelay(true);
  const socket = new RawSocket(handle);
  socket.events = events;
  const req = new B.TCPConnectWrap();
  req.oncomplete = afterConnect;
  req.socket = socket;
  // An IP literal (the snapshot schema's): only IPv6 has colons, checked without isIPv6's regex per connection.
  const v6 = address.includes(':');
  let err = 0;
  if (localAddress !== undefined && localAddress.includes(':') === v6)
    err = v6 ? handle.bind6(localAddress, 0, 0) : handle.bind(localAddress, 0);
  if (err === 0) err = v6 ? handle.connect6(req, address, port) : handle.connect(req, address, port);
  if (err !== 0) process.nextTick(() => socket.connected(err));
  return socket;
}

/**
 * Linux copies TCP_NODELAY from a listening socket to the sockets it accepts (the accepted socket is a clone
 * of the listener's), so setting it once on the listener saves a setsockopt() per connection; elsewhere each
 * accepted socket gets its own. raw-tcp.test.ts reads the option on an accepted socket.
 */
const NODELAY_INHERITED = process.platform === 'linux';

/**
 * A listening TCP socket handing out each accepted connection as a {@link RawSocket}, not yet reading (the
 * client's first bytes wait in the kernel until the owner starts relaying), with Nagle off.
 */
export class RawServer {
  private readonly handle = new B.TCP(B.SERVER);
  private closed = false;

  constructor(onConnection: (socket: RawSocket) => void, onError: (err: NodeJS.ErrnoException) => void) {
    this.handle.onconnection = (status, client) => {
      if (status !== 0 || client === undefined) {
        // EMFILE and the like: the connection stays in the backlog; libuv retries on the next loop turn.
        onError(uvError(status, 'accept'));
        return;
      }
      if (!NODELAY_INHERITED) client.setNoDelay(true);
      onConnection(new RawSocket(client));
    };
  }

  /**
   * Binds (with SO_REUSEADDR, as net does) and listens; throws the bind or listen error (EADDRINUSE...), with
   * `address` and `port` set. Both fail synchronously: libuv defers a bind's EADDRINUSE to the listen call,
   * which is made here, so no bind error can surface later through the accept callback. `reusePort` shares
   * the address:port with other sockets that set it too (peer nodes on the host); ignored where
   * {@link RAW_TCP_REUSEPORT} is false.
   */
  listen(host: string, port: number, backlog: number, reusePort = false): void {
    const ipv6 = isIPv6(host);
    const flags = reusePort ? (B.UV_TCP_REUSEPORT ?? 0) : 0;
    // No UV_TCP_IPV6ONLY: a wildcard IPv6 listener takes IPv4 too, as net.Server's does.
    let err = ipv6 ? this.handle.bind6(host, port, flags) : this.handle.bind(host, port, flags);
    // The bind created the socket, so this applies now, and accepted sockets inherit it (see NODELAY_INHERITED).
    if (err === 0 && NODELAY_INHERITED) err = this.handle.setNoDelay(true);
    if (err === 0) err = this.handle.listen(backlog);
    if (err !== 0) {
      this.close();
      throw Object.assign(uvError(err, 'listen', `${host}:${port}`), { address: host, port });
    }
  }

  address(): SocketAddress {
    const out: Partial<SocketAddress> = {};
    const err = this.handle.getsockname(out);
    if (err !== 0) throw uvError(err, 'getsockname');
    return out as SocketAddress;
  }

  /** Stops accepting; connections already accepted are not affected. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.handle.close();
  }
}
