import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';

/** Real processes for end-to-end tests: the built API and nodes, with their output kept for assertions. */
export interface Proc {
  child: ChildProcess;
  output: string[];
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export const API_MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
export const L4_MAIN = fileURLToPath(new URL('../../l4-node/dist/main.js', import.meta.url));
export const L7_MAIN = fileURLToPath(new URL('../../l7-node/dist/main.js', import.meta.url));

export function startProcess(script: string, env: Record<string, string>): Proc {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout?.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
  child.stderr?.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
  return {
    child,
    output,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill(signal);
      await exited;
    },
  };
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

/** A health queue and key prefix of the test's own, so parallel tests never share Redis state. */
export function isolatedHealthEnv(): { SLB_HEALTH_QUEUE: string; SLB_HEALTH_KEY_PREFIX: string } {
  const id = `test-${randomUUID()}`;
  return { SLB_HEALTH_QUEUE: id, SLB_HEALTH_KEY_PREFIX: `${id}:health` };
}

/** Deletes what a test left in Redis under its queue and prefix. */
export async function cleanupRedis(env: { SLB_HEALTH_QUEUE: string; SLB_HEALTH_KEY_PREFIX: string }): Promise<void> {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
  });
  try {
    await redis.connect();
    for (const pattern of [`bull:${env.SLB_HEALTH_QUEUE}:*`, `${env.SLB_HEALTH_KEY_PREFIX}*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
        if (keys.length > 0) await redis.del(...keys);
        cursor = next;
      } while (cursor !== '0');
    }
  } catch {
    // Redis away: nothing to clean.
  } finally {
    redis.disconnect();
  }
}
