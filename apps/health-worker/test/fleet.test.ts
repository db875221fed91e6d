import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { HealthScheduler } from '@slb/api/health';
import { Backend, cleanRedis, REDIS_URL, until } from '@slb/test-support/health-worker';
import { createTestDb, type TestDb } from '@slb/test-support/test-db';
import { afterAll, beforeAll, expect, it } from 'vitest';

// Runs the built worker (`npx tsc -b apps/health-worker`), as an operator would.
const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const queue = `test-${randomUUID()}`;
const keyPrefix = `test-${randomUUID()}`;
const INTERVAL_MS = 1000;

interface Proc {
  child: ChildProcess;
  metricsPort: number;
}

let t: TestDb;
let scheduler: HealthScheduler;
const backends: Backend[] = [];
const procs: Proc[] = [];

async function startWorker(): Promise<Proc> {
  const child = spawn(process.execPath, [MAIN], {
    env: {
      ...process.env,
      REDIS_URL,
      SLB_HEALTH_QUEUE: queue,
      SLB_HEALTH_KEY_PREFIX: keyPrefix,
      SLB_HEALTH_CONCURRENCY: '20',
      SLB_METRICS_PORT: '0',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // Registered before it is ready, so that afterAll kills it even when beforeAll times out.
  const proc = { child, metricsPort: 0 };
  procs.push(proc);
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  proc.metricsPort = await until(
    'worker ready',
    () => {
      const line = out.split('\n').find((l) => l.includes('health worker ready'));
      return line ? (JSON.parse(line) as { metricsPort: number }).metricsPort : undefined;
    },
    10_000,
  );
  return proc;
}

async function checksRun(proc: Proc): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${proc.metricsPort}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('slb_health_checks_total{'))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

/** Hits of each backend in [from, to) and the largest gap between consecutive ones. */
function window(from: number, to: number) {
  return backends.map((b) => {
    const hits = b.hits.filter((at) => at >= from && at < to);
    const gaps = hits.slice(1).map((at, i) => at - hits[i]!);
    return { count: hits.length, minGap: Math.min(...gaps), maxGap: Math.max(...gaps) };
  });
}

beforeAll(async () => {
  t = createTestDb();
  const g = t.group();
  for (let i = 0; i < 6; i++) {
    const b = await Backend.start();
    backends.push(b);
    t.server(g, '127.0.0.1', b.port);
  }
  t.listener({ serverGroupId: g, port: 80, healthCheck: { interval: INTERVAL_MS / 1000, timeout: 1 } });
  await Promise.all([startWorker(), startWorker()]);
  // Few shards, so that shard jobs carry several probes each and the workers split jobs, not single probes.
  scheduler = new HealthScheduler({ store: t.store, redisUrl: REDIS_URL, queue, resyncIntervalMs: 0, shards: 3 });
  const synced = await scheduler.sync();
  expect(synced).toMatchObject({ probes: 6 });
  expect(synced.total).toBeLessThan(6);
  await until('every target checked once', () => backends.every((b) => b.hits.length >= 1), 5000);
}, 30_000);

afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  await scheduler?.close();
  for (const b of backends) await b.stop();
  t?.close();
  await cleanRedis(keyPrefix, queue);
});

it('two workers share the targets and check each once per interval', async () => {
  const from = Date.now();
  // A fixed window on purpose: the test counts checks per interval in it, too many as much as too few.
  await new Promise((r) => setTimeout(r, 4 * INTERVAL_MS + 100));
  for (const w of window(from, Date.now())) {
    expect(w.count).toBeGreaterThanOrEqual(3);
    expect(w.count).toBeLessThanOrEqual(5);
    expect(w.minGap).toBeGreaterThan(INTERVAL_MS * 0.7);
  }
  // Both took a share.
  for (const p of procs) expect(await checksRun(p)).toBeGreaterThan(0);
});

it('a killed worker loses no target: the other keeps checking within about one interval', async () => {
  const [victim, survivor] = procs as [Proc, Proc];
  const before = await checksRun(survivor);
  victim.child.kill('SIGKILL');
  await until('victim gone', () => victim.child.exitCode !== null || victim.child.signalCode !== null, 5000);
  const from = Date.now();
  await new Promise((r) => setTimeout(r, 4 * INTERVAL_MS + 100)); // a counting window, as above
  for (const w of window(from, Date.now())) {
    expect(w.count).toBeGreaterThanOrEqual(3);
    expect(w.count).toBeLessThanOrEqual(5);
    expect(w.maxGap).toBeLessThan(2 * INTERVAL_MS + 300);
    // Checked twice in one slot would be a gap near 0. Right after the kill the survivor's probes may run
    // late by a few hundred ms (it takes the victim's jobs; a loaded machine saw 572 ms), then on time again.
    expect(w.minGap).toBeGreaterThan(INTERVAL_MS * 0.4);
  }
  expect(await checksRun(survivor)).toBeGreaterThanOrEqual(before + 6 * 3);
});

it('stops on SIGTERM', async () => {
  const survivor = procs[1]!;
  survivor.child.kill('SIGTERM');
  const code = await until(
    'exit',
    () => (survivor.child.exitCode !== null ? { code: survivor.child.exitCode } : undefined),
    10_000,
  );
  expect(code.code).toBe(0);
});
