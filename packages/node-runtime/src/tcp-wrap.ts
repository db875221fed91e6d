import { getSystemErrorName } from 'node:util';

/**
 * Node's own libuv TCP handle bindings (`tcp_wrap`, `stream_wrap`: what net.Socket is built on), the one
 * place the nodes reach into Node internals: the L4 node's raw sockets (apps/l4-node/src/raw-tcp.ts explains
 * why) and the L7 fast path's reads and writes (apps/l7-node/src/handle-io.ts). They are not a public API:
 * net.js has used them alike from Node 12 to 24, and `tcp-wrap.test.ts` (run on every runtime CI tests) fails
 * loudly if a release changes them. Loaded and checked at import, so a runtime without them stops the node
 * at start with the missing piece named, not on the first connection.
 */

/** A libuv request (connect, write, shutdown); `socket` is its owner's, carried so no closure is needed. */
export interface Req<S> {
  oncomplete: (this: Req<S>, status: number) => void;
  handle?: TcpHandle<S>;
  socket?: S;
  /** Keeps a pending write's bytes alive: libuv writes from them after the call returns (as net.js does). */
  buffer?: Buffer;
  /** The same for a pending writev's buffers. */
  chunks?: Buffer[];
}

export interface SocketAddress {
  address: string;
  family: string;
  port: number;
}

/** The slice of Node's internal TCP handle (src/tcp_wrap.cc, src/stream_base.cc) the node uses. */
export interface TcpHandle<S> {
  /**
   * Called with `this` = the handle; the byte count or error is in streamBaseState. With a user buffer it may
   * return the next one; without, the bytes are in `arrayBuffer` from streamBaseState's offset.
   */
  onread: (this: TcpHandle<S>, arrayBuffer?: ArrayBuffer) => Buffer | undefined;
  onconnection: (status: number, client: TcpHandle<S> | undefined) => void;
  owner: S | undefined;
  bind(addr: string, port: number, flags?: number): number;
  bind6(addr: string, port: number, flags: number): number;
  listen(backlog: number): number;
  connect(req: Req<S>, addr: string, port: number): number;
  connect6(req: Req<S>, addr: string, port: number): number;
  getsockname(out: Partial<SocketAddress>): number;
  getpeername(out: Partial<SocketAddress>): number;
  setNoDelay(on: boolean): number;
  readStart(): number;
  readStop(): number;
  useUserBuffer(buf: Buffer): void;
  writeBuffer(req: Req<S>, buf: Buffer): number;
  writeLatin1String(req: Req<S>, data: string): number;
  /** `allBuffers` true: `chunks` are Buffers (the form the nodes use). */
  writev(req: Req<S>, chunks: Buffer[], allBuffers: true): number;
  shutdown(req: Req<S>): number;
  close(): void;
  reset(): number;
  /** Bytes read and written over the handle's life (all writes, net.Socket's and ours). */
  readonly bytesRead: number;
  readonly bytesWritten: number;
  /** net.Socket's own note of whether it reads (set by net.js); kept true to it when reading is handed back. */
  reading?: boolean;
  /** Bytes of writes libuv still holds (not yet taken by the kernel); 0 when every write completed. */
  readonly writeQueueSize: number;
}

export interface TcpWrap<S> {
  TCP: new (type: number) => TcpHandle<S>;
  TCPConnectWrap: new () => Req<S>;
  WriteWrap: new () => Req<S>;
  ShutdownWrap: new () => Req<S>;
  /** `new TCP(SOCKET)` connects, `new TCP(SERVER)` listens. */
  SOCKET: number;
  SERVER: number;
  /**
   * bind/bind6's flag for SO_REUSEPORT (Node ≥ 22.12); undefined on older runtimes, where a second node
   * cannot share the address (runtime-capabilities.ts reports that at start).
   */
  UV_TCP_REUSEPORT: number | undefined;
  /** Where a read's byte count (or error) and a write's "went async" flag are left for the callback. */
  state: Int32Array;
  kReadBytesOrError: number;
  /** Where, in the ArrayBuffer passed to onread, the bytes read start (reads without a user buffer). */
  kArrayBufferOffset: number;
  kLastWriteWasAsync: number;
}

/** Every handle method the node calls, checked on TCP.prototype. */
const HANDLE_METHODS = [
  'bind',
  'bind6',
  'listen',
  'connect',
  'connect6',
  'getsockname',
  'getpeername',
  'setNoDelay',
  'readStart',
  'readStop',
  'useUserBuffer',
  'writeBuffer',
  'writeLatin1String',
  'writev',
  'shutdown',
  'close',
  'reset',
] as const;

type Binding = (name: string) => Record<string, unknown>;

/**
 * process.binding without its deprecation warning (DEP0111, printed only under --pending-deprecation): the
 * node uses it on purpose and checks what it gets, and the warning on stderr would break the one-line reason
 * a refused start prints there.
 */
function quietBinding(): Binding | undefined {
  const binding = (process as unknown as { binding?: Binding }).binding;
  if (typeof binding !== 'function') return undefined;
  return (name) => {
    const before = process.noDeprecation;
    process.noDeprecation = true;
    try {
      return binding.call(process, name);
    } finally {
      process.noDeprecation = before;
    }
  };
}

/**
 * Loads the bindings through `binding` (default `process.binding`) and checks every member the node uses;
 * throws naming the first one missing.
 */
export function loadTcpWrap<S>(binding?: Binding): TcpWrap<S> {
  const load = binding ?? quietBinding();
  const changed = (what: string) =>
    new Error(`Node.js ${process.version} changed its internal TCP handles (the nodes' raw TCP paths): ${what}`);
  if (typeof load !== 'function') throw changed('process.binding is gone');
  const tcp = load('tcp_wrap');
  const stream = load('stream_wrap');
  const constants = (tcp.constants ?? {}) as Record<string, unknown>;
  for (const name of ['TCP', 'TCPConnectWrap'] as const) {
    if (typeof tcp[name] !== 'function') throw changed(`tcp_wrap has no ${name}`);
  }
  for (const name of ['WriteWrap', 'ShutdownWrap'] as const) {
    if (typeof stream[name] !== 'function') throw changed(`stream_wrap has no ${name}`);
  }
  for (const name of ['SOCKET', 'SERVER'] as const) {
    if (typeof constants[name] !== 'number') throw changed(`tcp_wrap.constants has no ${name}`);
  }
  if (!(stream.streamBaseState instanceof Int32Array)) throw changed('stream_wrap has no streamBaseState');
  for (const name of ['kReadBytesOrError', 'kArrayBufferOffset', 'kLastWriteWasAsync'] as const) {
    if (typeof stream[name] !== 'number') throw changed(`stream_wrap has no ${name}`);
  }
  const proto = (tcp.TCP as { prototype: Record<string, unknown> }).prototype;
  for (const name of HANDLE_METHODS) {
    if (typeof proto[name] !== 'function') throw changed(`a TCP handle has no ${name}()`);
  }
  for (const name of ['writeQueueSize', 'bytesRead', 'bytesWritten'] as const) {
    if (!(name in proto)) throw changed(`a TCP handle has no ${name}`);
  }
  return {
    TCP: tcp.TCP as TcpWrap<S>['TCP'],
    TCPConnectWrap: tcp.TCPConnectWrap as TcpWrap<S>['TCPConnectWrap'],
    WriteWrap: stream.WriteWrap as TcpWrap<S>['WriteWrap'],
    ShutdownWrap: stream.ShutdownWrap as TcpWrap<S>['ShutdownWrap'],
    SOCKET: constants.SOCKET as number,
    SERVER: constants.SERVER as number,
    UV_TCP_REUSEPORT: typeof constants.UV_TCP_REUSEPORT === 'number' ? constants.UV_TCP_REUSEPORT : undefined,
    state: stream.streamBaseState,
    kReadBytesOrError: stream.kReadBytesOrError as number,
    kArrayBufferOffset: stream.kArrayBufferOffset as number,
    kLastWriteWasAsync: stream.kLastWriteWasAsync as number,
  };
}

/** A libuv error code as the Error Node would give, with `code` (e.g. ECONNREFUSED) and `errno`. */
export function uvError(errno: number, syscall: string, detail?: string): NodeJS.ErrnoException {
  let code: string;
  try {
    code = getSystemErrorName(errno);
  } catch {
    code = `E${-errno}`;
  }
  return Object.assign(new Error(`${syscall} ${code}${detail ? ` ${detail}` : ''}`), { code, errno, syscall });
}
