import { type ChildProcess, spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { eventually } from '@slb/test-support/fleet';
import { Backend } from '@slb/test-support/health-worker';
import { deleteRedisKeys } from '@slb/test-support/redis-keys';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, makeApp, newTenant, type TestApp } from './helpers.js';

// Two deployments from two checkouts on one Redis, with nothing configured by hand: each API derives its
// own namespace from its cluster id, and its health worker (the built one, as an operator runs it) learns
// that namespace from SLB_API_URL. Before namespaces both used `slb-health` / `slb:health`: each API removed
// the other's job schedulers, and each read the other's transitions under one consumer name and dropped
// them as unknown, so dead backends were seen late or never.

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const WORKER_MAIN = fileURLToPath(new URL('../../health-worker/dist/main.js', import.meta.url));
const INTERVAL_S = 1;
const UNHEALTHY_THRESHOLD = 2;
/** What the issue promises: a dead backend is abnormal within interval × threshold + 1 s. */
const DETECTION_BUDGET_MS = INTERVAL_S * UNHEALTHY_THRESHOLD * 1000 + 1000;

interface Deployment {
  t: TestApp;
  worker: ChildProcess;
  workerOut: string[];
  token: string;
  lbId: string;
  listenerId: string;
  backends: Backend[];
  serverIds: string[];
}

const deployments: Deployment[] = [];

async function startDeployment(): Promise<Deployment> {
  const t = await makeApp(undefined, { redisUrl: REDIS_URL });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const apiUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  const d: Deployment = {
    t,
    worker: undefined as unknown as ChildProcess,
    workerOut: [],
    token: '',
    lbId: '',
    listenerId: '',
    backends: [],
    serverIds: [],
  };
  deployments.push(d); // before anything can fail, so afterAll cleans it up
  const { SLB_HEALTH_QUEUE: _q, SLB_HEALTH_KEY_PREFIX: _p, ...env } = process.env;
  d.worker = spawn(process.execPath, [WORKER_MAIN], {
    env: { ...env, REDIS_URL, SLB_API_URL: apiUrl, SLB_METRICS_PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  d.worker.stdout!.on('data', (b: Buffer) => d.workerOut.push(...b.toString().split('\n').filter(Boolean)));
  d.worker.stderr!.on('data', (b: Buffer) => d.workerOut.push(...b.toString().split('\n').filter(Boolean)));

  d.backends = [await Backend.start(), await Backend.start()];
  ({ token: d.token } = await newTenant(t.app));
  const lb = await call(t.app, d.token, 'POST', '/v1/load-balancers', { name: 'web' });
  d.lbId = lb.body.id;
  const sg = await call(t.app, d.token, 'POST', `/v1/load-balancers/${d.lbId}/server-groups`, {
    name: 'pool',
    servers: d.backends.map((b) => ({ address: '127.0.0.1', port: b.port })),
  });
  expect(sg.status).toBe(201);
  d.serverIds = sg.body.servers.map((s: { id: string }) => s.id);
  const listener = await call(t.app, d.token, 'POST', `/v1/load-balancers/${d.lbId}/listeners`, {
    protocol: 'tcp',
    port: 5432,
    serverGroupId: sg.body.id,
    healthCheck: {
      interval: INTERVAL_S,
      timeout: 1,
      healthyThreshold: 2,
      unhealthyThreshold: UNHEALTHY_THRESHOLD,
    },
  });
  expect(listener.status).toBe(201);
  d.listenerId = listener.body.id;
  return d;
}

async function statuses(d: Deployment): Promise<Map<string, string>> {
  const res = await call(d.t.app, d.token, 'GET', `/v1/load-balancers/${d.lbId}/health`);
  return new Map(
    (res.body.items as { serverId: string; status: string; since: string }[]).map((i) => [i.serverId, i.status]),
  );
}

beforeAll(async () => {
  await startDeployment();
  await startDeployment();
}, 60_000);

afterAll(async () => {
  for (const d of deployments) {
    const exited = new Promise((r) => d.worker.once('exit', r));
    d.worker.kill('SIGTERM');
    await exited;
    for (const b of d.backends) await b.stop();
    const ns = d.t.app.namespace;
    await d.t.close();
    await deleteRedisKeys(REDIS_URL, [`bull:${ns.healthQueue}:*`, `${ns.healthKeyPrefix}:*`]);
  }
}, 30_000);

describe('two deployments on one Redis', () => {
  it('each has its own namespace, and its worker joins it', async () => {
    for (const d of deployments) {
      const ready = await eventually(
        'worker ready',
        async () => d.workerOut.find((l) => l.includes('health worker ready')),
        15_000,
      );
      expect(JSON.parse(ready)).toMatchObject({
        queue: d.t.app.namespace.healthQueue,
        keyPrefix: d.t.app.namespace.healthKeyPrefix,
        clusterId: d.t.app.namespace.clusterId,
      });
    }
    const [a, b] = deployments.map((d) => d.t.app.namespace);
    expect(a!.clusterId).toMatch(/^slb-[0-9a-f]{12}$/);
    expect(a!.clusterId).not.toBe(b!.clusterId);
    expect(a!.healthQueue).not.toBe(b!.healthQueue);
    expect(a!.healthKeyPrefix).not.toBe(b!.healthKeyPrefix);
    expect(a!.sessionSyncPrefix).not.toBe(b!.sessionSyncPrefix);
  });

  it('sees a backend killed in each within interval × threshold + 1 s, and loses no transition', async () => {
    // Every server normal first: each deployment stored its own transitions (none dropped by the other).
    for (const d of deployments) {
      await eventually(
        'every server normal',
        async () => ([...(await statuses(d)).values()].every((s) => s === 'normal') ? true : undefined),
        20_000,
      );
    }
    const killedAt = Date.now();
    await Promise.all(deployments.map((d) => d.backends[0]!.stop()));
    const detected = await Promise.all(
      deployments.map((d) =>
        eventually(
          'the killed backend abnormal',
          async () => ((await statuses(d)).get(d.serverIds[0]!) === 'abnormal' ? Date.now() - killedAt : undefined),
          DETECTION_BUDGET_MS + 10_000,
          25, // the time to detection is measured at the poll: a coarser poll would eat into the budget
        ),
      ),
    );
    for (const ms of detected) expect(ms).toBeLessThanOrEqual(DETECTION_BUDGET_MS);
    for (const d of deployments) expect((await statuses(d)).get(d.serverIds[1]!)).toBe('normal');

    // Nothing of one deployment reached the other's stream: no transition was skipped as unknown.
    const redis = new Redis(REDIS_URL);
    try {
      for (const d of deployments) {
        const metrics = await d.t.app.inject({ method: 'GET', url: '/metrics' });
        const skipped = metrics.body.split('\n').find((l) => l.includes('outcome="skipped"'));
        expect(skipped === undefined || skipped.endsWith(' 0'), skipped).toBe(true);
        const stream = `${d.t.app.namespace.healthKeyPrefix}:transitions`;
        expect(await redis.xlen(stream)).toBeGreaterThanOrEqual(3);
      }
    } finally {
      await redis.quit();
    }
  }, 60_000);
});
