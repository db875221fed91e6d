import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeploymentNamespace } from '@slb/model';
import { API_MAIN, eventually, freePort, type Proc, startProcess } from '@slb/test-support/fleet';
import { deleteRedisKeys } from '@slb/test-support/redis-keys';
import { afterAll, expect, it } from 'vitest';

// The namespace belongs to the database, not to the process: every API process on one database (a restart,
// a standby taking over the file, later replicas on a shared database) uses the same Redis names, and the
// explicit variables override single names without changing the deployment's id.

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const dirs: string[] = [];
const seen: DeploymentNamespace[] = [];

afterAll(async () => {
  for (const ns of seen) await deleteRedisKeys(REDIS_URL, [`bull:${ns.healthQueue}:*`, `${ns.healthKeyPrefix}:*`]);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'slb-namespace-'));
  dirs.push(d);
  return d;
}

/** Starts the built API on `dir`'s database, reads its namespace over HTTP, and stops it. */
async function namespaceOfProcess(dir: string, env: Record<string, string> = {}): Promise<DeploymentNamespace> {
  const port = await freePort();
  const proc: Proc = startProcess(API_MAIN, {
    PORT: String(port),
    SLB_DNS_PORT: String(await freePort()),
    SLB_DB_PATH: join(dir, 'slb.db'),
    SLB_ADMIN_TOKEN: 'namespace-test-admin-token',
    REDIS_URL,
    LOG_LEVEL: 'warn',
    ...env,
  });
  try {
    const ns = await eventually(
      'the API answering',
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/control/v1/namespace`);
        return res.ok ? ((await res.json()) as DeploymentNamespace) : undefined;
      },
      20_000,
    );
    seen.push(ns);
    return ns;
  } finally {
    await proc.stop();
  }
}

it('gives every API process on one database the same namespace, and another database another', async () => {
  const dir = tempDir();
  const first = await namespaceOfProcess(dir);
  expect(first.clusterId).toMatch(/^slb-[0-9a-f]{12}$/);
  expect(await namespaceOfProcess(dir)).toEqual(first);
  const other = await namespaceOfProcess(tempDir());
  expect(other.clusterId).not.toBe(first.clusterId);
  expect(other.healthQueue).not.toBe(first.healthQueue);

  // An explicit variable replaces its name only; the deployment stays the same one.
  const overridden = await namespaceOfProcess(dir, { SLB_HEALTH_QUEUE: `${first.clusterId}-custom` });
  expect(overridden).toEqual({ ...first, healthQueue: `${first.clusterId}-custom` });
}, 90_000);
