import net from 'node:net';
import { ReadBuffer } from '@slb/node-runtime';

/** A new connection's first reads go into a small buffer, so an idle connection holds little memory. */
export const RELAY_MIN_BUFFER = 4 * 1024;
/** A read that filled the buffer marks a bulk flow: its next reads get this much room. */
export const RELAY_MAX_BUFFER = 128 * 1024;

/**
 * One direction of a proxied TCP connection, read with `onread` into a {@link ReadBuffer} this relay owns:
 * at gigabytes per second a fresh allocation per read kept V8's garbage collector busy, which on one core
 * cost about half of the bulk throughput.
 *
 * A buffer is only written into while its bytes are no longer needed: a chunk whose write to the peer
 * did not complete at once (the peer's kernel buffer is full) pauses reading until that write is done,
 * which is the backpressure a pipe would apply anyway. The peer's FIN is passed on separately
 * (allowHalfOpen keeps the other direction open).
 */
export class ReadRelay {
  private to: net.Socket | undefined;
  private from: net.Socket | undefined;
  private readonly buf = new ReadBuffer(RELAY_MIN_BUFFER, RELAY_MAX_BUFFER);
  private waiting = false;

  /** The `onread` option for the socket this relay reads. */
  readonly onread = {
    buffer: (): Buffer => this.buf.current,
    callback: (n: number, buf: Buffer): boolean => this.onData(n, buf),
  };

  /** Room for the next read (memory held while the connection idles). */
  get bufferSize(): number {
    return this.buf.current.length;
  }

  /** Starts relaying `from` (created with {@link onread}) to `to`; the caller resumes `from`. */
  connect(from: net.Socket, to: net.Socket): void {
    this.from = from;
    this.to = to;
    from.once('end', this.onEnd);
  }

  private onData(n: number, buf: Buffer): boolean {
    const to = this.to;
    // Reading only starts once connected; a stray callback after teardown has nowhere to go.
    if (to === undefined || to.destroyed) return false;
    to.write(buf.subarray(0, n), this.afterWrite);
    // Node asks for the next read's buffer right after this callback. While this chunk's write is pending,
    // reading pauses (below), so the same buffer can take the next read.
    this.buf.afterRead(n, false);
    if (to.writableLength === 0) return true;
    this.waiting = true;
    return false;
  }

  private readonly afterWrite = (): void => {
    if (!this.waiting || (this.to?.writableLength ?? 0) !== 0) return;
    this.waiting = false;
    this.from?.resume();
  };

  private readonly onEnd = (): void => {
    this.to?.end();
  };
}

/**
 * Makes `server` hand out sockets that read into a {@link ReadRelay}'s buffer. Node only offers `onread`
 * on outgoing sockets, so this takes over the listening handle's accept callback and builds the socket
 * the way net.Server does (paused, half-open allowed, no Nagle), counted in the server's connections so
 * close() and getConnections() still see it. Call after `listen`.
 */
export function acceptWithRelays(server: net.Server, onSocket: (socket: net.Socket, relay: ReadRelay) => void): void {
  const handle = (server as unknown as { _handle?: AcceptHandle })._handle;
  if (handle === undefined || handle === null || typeof handle.onconnection !== 'function') {
    throw new Error('this Node.js runtime does not expose the listening handle (node:net internals changed)');
  }
  const internals = server as unknown as { _connections: number };
  handle.onconnection = (err: number, clientHandle: ClientHandle | undefined): void => {
    if (err || clientHandle === undefined) {
      server.emit('error', Object.assign(new Error(`accept failed (${err})`), { errno: err, syscall: 'accept' }));
      return;
    }
    const relay = new ReadRelay();
    const socket = new net.Socket({
      handle: clientHandle,
      allowHalfOpen: true,
      pauseOnCreate: true,
      readable: true,
      writable: true,
      onread: relay.onread,
    } as net.SocketConstructorOpts);
    clientHandle.setNoDelay(true);
    internals._connections++;
    Object.assign(socket, { server, _server: server });
    onSocket(socket, relay);
  };
}

interface ClientHandle {
  setNoDelay(on: boolean): void;
}

interface AcceptHandle {
  onconnection: (err: number, clientHandle: ClientHandle | undefined) => void;
}
