// Buffer is imported, not taken from globalThis, where it is an accessor (a getter call per use).
import { Buffer } from 'node:buffer';
import type { Socket } from 'node:net';
import { loadTcpWrap, uvError, type TcpHandle as WrapHandle, type Req as WrapReq } from '@slb/node-runtime';

// The fast path's reads and writes, made on a net.Socket's own TCP handle rather than through the socket's
// Readable and Writable: a request costs a read and a write on each side, and the stream machinery around
// them (push, emit, writeOrBuffer, write requests, nextTicks) was 7–10% of the node's profile samples
// (bench/README, "The L7 fast path on the sockets' handles", has what leaving it out saved). The socket stays
// what it is for everything else: accepting, its close and error events, end() and destroy(), its byte counts
// (net.js reads them off the handle), and node:http after a hand-over, which gets reading back.
// libuv keeps one queue of writes per handle, so bytes written here and by the socket (end(), a hand-over's
// answers) leave in the order they were written, and a shutdown waits for the writes queued before it.

type Req = WrapReq<HandleIo>;
/**
 * `fastIo`, not the bindings' `owner`: on a handle net.Socket owns, `owner` is an accessor for the socket
 * itself, which net.js's callbacks look up.
 */
type TcpHandle = WrapHandle<HandleIo> & { fastIo?: HandleIo };
const B = loadTcpWrap<HandleIo>();
/** libuv's "operation canceled": a write still queued when its handle closed. */
const UV_ECANCELED = -125;
/**
 * Bytes waiting in libuv's queue past which a write says "stop" (net.Socket's default highWaterMark): a
 * response that fills the kernel's buffer by a few KiB does not pause the backend for a round of
 * readStop and readStart.
 */
export const WRITE_HIGH_WATER = 16 * 1024;

/** What the owner of a HandleIo hears; methods, not events, so a call costs no emit. */
export interface HandleIoEvents {
  /** Bytes read from the socket, in a buffer of their own (they may be kept); see {@link HandleIo.takeReads}. */
  onBytes(chunk: Buffer): void;
  /** Every write made here has completed (after one that had to wait for the kernel). */
  onWritten(): void;
}

function handleOf(socket: Socket): TcpHandle | null {
  return (socket as unknown as { _handle: TcpHandle | null })._handle;
}

export class HandleIo {
  /** Writes that could not complete at once and are still in libuv's queue. */
  pending = 0;
  /** net.Socket's read callback while this object reads; null when the socket reads for itself. */
  private nodeOnRead: TcpHandle['onread'] | null = null;
  private paused = false;
  /** The last write waits in libuv's queue. */
  private async = false;
  /**
   * A write request no write holds: one that completes at once never binds its request object, so the next
   * write takes it again; only a write left waiting keeps its own, and a new one is made after it.
   */
  private spare: Req | null = null;
  /** Set by {@link takeUserBufferReads}. */
  private userRead: ((n: number) => Buffer) | null = null;

  constructor(
    readonly socket: Socket,
    private readonly events: HandleIoEvents,
  ) {}

  /**
   * Reads from the handle into `events.onBytes` from now on. Returns the bytes the socket had read
   * already (what followed a PROXY header), or null.
   */
  takeReads(): Buffer | null {
    const h = handleOf(this.socket);
    if (h === null || this.nodeOnRead !== null) return null;
    const before = this.socket.read() as Buffer | null;
    this.nodeOnRead = h.onread;
    h.fastIo = this;
    h.onread = onRead;
    // net.Socket stops reading when its buffer is full; from here this object decides.
    if (h.reading !== true) {
      h.reading = true;
      h.readStart();
    }
    return before;
  }

  /**
   * For a socket made with net's `onread` option (reads into a buffer of its owner's, no allocation per
   * read): from now on each read calls `read(n)` straight from the handle, skipping net.js's per-read
   * bookkeeping, and `read` returns the buffer for the next one. EOF and errors still go to net.Socket.
   * Reading itself (start, pause, resume) stays the socket's. False when the socket has no handle.
   */
  takeUserBufferReads(read: (n: number) => Buffer): boolean {
    const h = handleOf(this.socket);
    if (h === null || this.nodeOnRead !== null) return false;
    this.nodeOnRead = h.onread;
    this.userRead = read;
    h.fastIo = this;
    h.onread = onUserBufferRead;
    return true;
  }

  /** Gives reading back to the socket (a hand-over to node:http), reading and unpaused. */
  releaseReads(): void {
    const h = handleOf(this.socket);
    const nodeOnRead = this.nodeOnRead;
    this.nodeOnRead = null;
    if (h === null || nodeOnRead === null) return;
    h.onread = nodeOnRead;
    this.resumeReads();
  }

  get readsPaused(): boolean {
    return this.paused;
  }

  pauseReads(): void {
    const h = handleOf(this.socket);
    if (this.paused || h === null) return;
    this.paused = true;
    h.reading = false;
    h.readStop();
  }

  resumeReads(): void {
    const h = handleOf(this.socket);
    if (!this.paused || h === null) return;
    this.paused = false;
    h.reading = true;
    h.readStart();
  }

  /** Writes queued past {@link WRITE_HIGH_WATER}: the writer waits for onWritten. */
  get needDrain(): boolean {
    if (this.pending === 0) return false;
    const h = handleOf(this.socket);
    return h !== null && h.writeQueueSize >= WRITE_HIGH_WATER;
  }

  /**
   * Writes `data` (a string as latin1). True when the writer may go on: the kernel took it all, or what
   * waits is under {@link WRITE_HIGH_WATER}; false asks it to wait for onWritten.
   */
  write(data: string | Buffer): boolean {
    const h = this.writable();
    if (h === null) return false;
    const req = this.request(h);
    if (typeof data === 'string') return this.dispatched(h, h.writeLatin1String(req, data));
    const ok = this.dispatched(h, h.writeBuffer(req, data));
    // libuv writes from these bytes after the call returns (a string was copied by the binding).
    if (this.async) req.buffer = data;
    return ok;
  }

  /** Writes two buffers in one system call; returns as write() does. */
  writev(first: Buffer, second: Buffer): boolean {
    const h = this.writable();
    if (h === null) return false;
    const req = this.request(h);
    const chunks = [first, second];
    const ok = this.dispatched(h, h.writev(req, chunks, true));
    if (this.async) req.chunks = chunks;
    return ok;
  }

  private writable(): TcpHandle | null {
    return this.socket.destroyed ? null : handleOf(this.socket);
  }

  private request(h: TcpHandle): Req {
    let req = this.spare;
    if (req === null) {
      req = new B.WriteWrap();
      req.handle = h;
      req.oncomplete = afterWrite;
      req.socket = this;
      this.spare = req;
    }
    return req;
  }

  private dispatched(h: TcpHandle, err: number): boolean {
    this.async = false;
    if (err !== 0) {
      this.failed(err);
      return false;
    }
    if (B.state[B.kLastWriteWasAsync] === 0) return true;
    this.async = true;
    this.spare = null;
    this.pending++;
    return h.writeQueueSize < WRITE_HIGH_WATER;
  }

  completed(status: number): void {
    this.pending--;
    if (status < 0) {
      if (status !== UV_ECANCELED) this.failed(status);
      return;
    }
    if (this.pending === 0) this.events.onWritten();
  }

  readBytes(chunk: Buffer): void {
    this.events.onBytes(chunk);
  }

  readIntoUserBuffer(n: number): Buffer {
    return this.userRead!(n);
  }

  /** EOF and read errors: net.Socket's own handling (EOF ends it after what was written, an error destroys it). */
  passOn(h: TcpHandle, arrayBuffer: ArrayBuffer | undefined): void {
    this.nodeOnRead?.call(h, arrayBuffer);
  }

  private failed(errno: number): void {
    this.socket.destroy(uvError(errno, 'write'));
  }
}

function onRead(this: TcpHandle, arrayBuffer?: ArrayBuffer): undefined {
  const io = this.fastIo!;
  const n = B.state[B.kReadBytesOrError]!;
  if (n > 0 && arrayBuffer !== undefined) io.readBytes(Buffer.from(arrayBuffer, B.state[B.kArrayBufferOffset], n));
  else io.passOn(this, arrayBuffer);
  return undefined;
}

function onUserBufferRead(this: TcpHandle, arrayBuffer?: ArrayBuffer): Buffer | undefined {
  const io = this.fastIo!;
  const n = B.state[B.kReadBytesOrError]!;
  // The binding takes the returned buffer for the next read (net.js's onStreamRead does the same).
  if (n > 0) return io.readIntoUserBuffer(n);
  io.passOn(this, arrayBuffer);
  return undefined;
}

function afterWrite(this: Req, status: number): void {
  this.socket!.completed(status);
}
