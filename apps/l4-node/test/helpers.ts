import { once } from 'node:events';
import net from 'node:net';
import type { NodeSnapshot, SnapshotBackend, SnapshotListener } from '@slb/model';
import { pino } from 'pino';
import { L4Node } from '../src/app.js';
import { L4Metrics } from '../src/metrics.js';

/** A resource id of the 20-character shape the control plane generates. */
export function rid(prefix: string, n: number): string {
  return `${prefix}-${n.toString(36).padStart(20, '0')}`;
}

/** The ports freePort gave this test file: the kernel may hand a port just closed out again. */
const handedOut = new Set<number>();

/**
 * A port that was free a moment ago (listener ports in snapshots must be concrete), and not given before in
 * this file: a test takes several before it binds them, and two of its listeners on one port clash.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const s = net.createServer().listen(0, host);
    await once(s, 'listening');
    const { port } = s.address() as net.AddressInfo;
    await new Promise((r) => s.close(r));
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no port on ${host} that was not given already`);
}

export function backend(n: number, port: number, extra: Partial<SnapshotBackend> = {}): SnapshotBackend {
  return { serverId: rid('srv', n), address: '127.0.0.1', port, weight: 10, healthy: true, ...extra };
}

export function listener(n: number, port: number, extra: Partial<SnapshotListener> = {}): SnapshotListener {
  return {
    id: rid('lsn', n),
    loadBalancerId: rid('lb', 1),
    tenantId: rid('tnt', 1),
    protocol: 'tcp',
    port,
    bindAddresses: ['127.0.0.1'],
    scheduler: 'wrr',
    persistenceTimeout: 0,
    proxyProtocol: 'off',
    connectionDrainTimeout: 10,
    idleTimeout: 60,
    sessionSync: false,
    backends: [],
    ...extra,
  };
}

export function snapshot(
  version: number,
  listeners: SnapshotListener[],
  extra: Partial<NodeSnapshot> = {},
): NodeSnapshot {
  return { version, generatedAt: '2026-11-30T00:00:00Z', listeners, l7Nodes: [], ...extra };
}

export function newNode(): L4Node {
  return new L4Node({ logger: pino({ level: 'silent' }), metrics: new L4Metrics({ defaultMetrics: false }) });
}

/**
 * A TCP backend that greets every connection with its name and a newline, then echoes. `received` keeps
 * the raw bytes of each connection (for PROXY header checks).
 */
export async function idServer(name: string, opts: { echo?: boolean } = {}) {
  const sockets = new Set<net.Socket>();
  const received: Buffer[][] = [];
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    sockets.add(s);
    const chunks: Buffer[] = [];
    received.push(chunks);
    s.on('data', (d) => chunks.push(d));
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    s.write(`${name}\n`);
    if (opts.echo ?? true) s.pipe(s);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  /** Resolves once connection `index` has received at least `bytes` bytes. */
  const waitBytes = async (index: number, bytes: number, timeoutMs = 5000): Promise<Buffer> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const got = Buffer.concat(received[index] ?? []);
      if (got.length >= bytes) return got;
      if (Date.now() > deadline) throw new Error(`backend ${name} got ${got.length} of ${bytes} bytes`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  return {
    name,
    waitBytes,
    port,
    received,
    sockets,
    connections: () => received.length,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A line-oriented client connection. */
export class LineClient {
  private buf = '';
  private waiters: ((line: string) => void)[] = [];
  private lines: string[] = [];
  readonly closed: Promise<void>;

  constructor(readonly socket: net.Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      this.buf += d;
      let i = this.buf.indexOf('\n');
      while (i >= 0) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        const w = this.waiters.shift();
        if (w) w(line);
        else this.lines.push(line);
        i = this.buf.indexOf('\n');
      }
    });
    socket.on('error', () => {});
    this.closed = new Promise((r) => socket.once('close', () => r()));
  }

  static async connect(port: number, opts: { host?: string; localAddress?: string } = {}): Promise<LineClient> {
    const s = net.connect({ port, host: opts.host ?? '127.0.0.1', localAddress: opts.localAddress });
    const c = new LineClient(s);
    await once(s, 'connect');
    return c;
  }

  line(timeoutMs = 5000): Promise<string> {
    const l = this.lines.shift();
    if (l !== undefined) return Promise.resolve(l);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('timed out waiting for a line')), timeoutMs);
      const cb = (line: string) => {
        clearTimeout(t);
        resolve(line);
      };
      this.waiters.push(cb);
      this.socket.once('close', () => {
        clearTimeout(t);
        const i = this.waiters.indexOf(cb);
        if (i >= 0) {
          this.waiters.splice(i, 1);
          reject(new Error('connection closed'));
        }
      });
    });
  }

  async echo(text: string): Promise<string> {
    this.socket.write(`${text}\n`);
    return this.line();
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** Connects, reads the greeting (the backend's name) and closes. */
export async function whoAnswers(port: number, opts: { localAddress?: string } = {}): Promise<string> {
  const c = await LineClient.connect(port, opts);
  try {
    return await c.line();
  } finally {
    c.destroy();
  }
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/**
 * Which node carried one new connection to `host:port`: the first line the backend answered (it answers with
 * the peer address it saw, each node's own). Rejects when the connection fails or closes without a line.
 */
export function carrier(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.connect({ host, port });
    let buf = '';
    const t = setTimeout(() => {
      c.destroy();
      reject(new Error('no answer'));
    }, 3000);
    c.on('data', (d) => {
      buf += d.toString();
    });
    c.once('error', (err) => {
      clearTimeout(t);
      reject(err);
    });
    c.once('close', () => {
      clearTimeout(t);
      if (buf.endsWith('\n')) resolve(buf.trim());
      else reject(new Error(`connection closed after ${JSON.stringify(buf)}`));
    });
  });
}

/**
 * Connects and reports what the node did with the connection: 'served' once the backend's greeting
 * arrives, 'refused' when the node closes it without a byte (it is accepted by the kernel first).
 */
export function attempt(
  port: number,
  localAddress?: string,
  timeoutMs = 10_000,
): Promise<{ outcome: 'served' | 'refused'; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    const timer = setTimeout(() => reject(new Error('neither served nor refused in time')), timeoutMs);
    socket.once('data', () => {
      clearTimeout(timer);
      resolve({ outcome: 'served', socket });
    });
    socket.on('error', () => {});
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ outcome: 'refused', socket });
    });
  });
}
