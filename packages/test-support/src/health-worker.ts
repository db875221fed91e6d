import { randomUUID } from 'node:crypto';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';

// The health-worker tests poll with the fleet's `until`; re-exported so they keep one import.
export { until } from './fleet/eventually.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A TCP backend on 127.0.0.1 that counts the connections it accepts; stop/start keep its port. */
export class Backend {
  hits: number[] = [];
  port = 0;
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();

  static async start(): Promise<Backend> {
    const b = new Backend();
    await b.listen();
    return b;
  }

  async listen(): Promise<void> {
    const server = createServer((socket) => {
      this.hits.push(Date.now());
      this.sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/**
 * A queue and key prefix of the test file's own, and closers for what its tests start. `cleanup`, for
 * `afterEach`, runs the closers last first, then deletes the file's Redis keys.
 */
export function isolatedWorkerRun(): {
  queue: string;
  keyPrefix: string;
  closers: Array<() => Promise<void> | void>;
  cleanup: () => Promise<void>;
} {
  const queue = `test-${randomUUID()}`;
  const keyPrefix = `test-${randomUUID()}`;
  const closers: Array<() => Promise<void> | void> = [];
  const cleanup = async (): Promise<void> => {
    for (const close of closers.reverse()) await close();
    await cleanRedis(keyPrefix, queue);
  };
  return { queue, keyPrefix, closers, cleanup };
}

/** Deletes a test's keys: the fleet's (by key prefix) and BullMQ's (by queue name). */
export async function cleanRedis(keyPrefix: string, queue: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    for (const pattern of [`${keyPrefix}:*`, `bull:${queue}:*`]) {
      let cursor = '0';
      for (let i = 0; i < 10_000; i++) {
        const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        if (keys.length > 0) await redis.del(...keys);
        cursor = next;
        if (cursor === '0') break;
      }
    }
  } finally {
    await redis.quit();
  }
}
