import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanupRedis, eventually, freePort, isolatedHealthEnv, L4_MAIN, L7_MAIN } from '@slb/test-support/fleet';
import { afterAll, describe, expect, it } from 'vitest';

// The metrics endpoints of nodes and health workers answer on SLB_METRICS_HOST only, not on every address.

const WORKER_MAIN = fileURLToPath(new URL('../../health-worker/dist/main.js', import.meta.url));
const HOST = '127.0.0.3';
const dir = mkdtempSync(join(tmpdir(), 'slb-metrics-host-'));
const healthEnv = isolatedHealthEnv();
const children: ReturnType<typeof spawn>[] = [];

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  await cleanupRedis(healthEnv);
});

const snapshot = { version: 1, generatedAt: '2026-12-01T00:00:00Z', listeners: [] };
const get = (host: string, port: number) =>
  fetch(`http://${host}:${port}/metrics`, { signal: AbortSignal.timeout(2000) }).then(
    async (r) => ({ status: r.status, text: await r.text() }),
    (err: Error) => ({ status: 0, text: String((err.cause as { code?: string })?.code ?? err.message) }),
  );

describe('metrics endpoints', () => {
  it.each([
    ['l4-node', L4_MAIN, /^slb_l4_/m, { ...snapshot, l7Nodes: [] }],
    ['l7-node', L7_MAIN, /^slb_l7_/m, snapshot],
    ['health-worker', WORKER_MAIN, /^slb_health_/m, null],
  ] as const)(
    '%s answers on its configured address only',
    async (name, main, family, config) => {
      const port = await freePort(HOST);
      const file = join(dir, `${name}.json`);
      if (config) writeFileSync(file, JSON.stringify(config));
      const child = spawn(process.execPath, [main, ...(config ? ['--config', file] : [])], {
        env: {
          ...process.env,
          ...healthEnv,
          SLB_METRICS_HOST: HOST,
          SLB_METRICS_PORT: String(port),
          SLB_SESSION_SYNC_REDIS_URL: 'off',
        },
        stdio: 'ignore',
      });
      children.push(child);
      const ok = await eventually(
        `${name} metrics on ${HOST}`,
        async () => {
          const r = await get(HOST, port);
          return r.status === 200 ? r : undefined;
        },
        20_000,
      );
      expect(ok.text).toMatch(family);
      // The same port on another loopback address: nothing listens there.
      expect((await get('127.0.0.1', port)).text).toBe('ECONNREFUSED');
      child.kill('SIGKILL');
    },
    30_000,
  );
});
