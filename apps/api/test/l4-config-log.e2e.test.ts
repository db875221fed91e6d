// An L4 node on the control channel says "config applied" once per version (it said it twice: once from the
// node's apply, once from the channel). Real API and node processes, on an address of this test's own.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  API_MAIN,
  cleanupRedis,
  eventually,
  freePort,
  isolatedHealthEnv,
  L4_MAIN,
  LOOPBACK_BACKENDS_ENV,
  type Proc,
  registerNode,
  startProcess,
} from '@slb/test-support/fleet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ADMIN = 'l4-config-log-admin-0123456789';
const ADDRESS = '127.0.0.233';
const healthEnv = isolatedHealthEnv();
let dir: string;
let apiUrl: string;
let api: Proc;
let node: Proc;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'slb-l4-log-'));
  const port = await freePort();
  apiUrl = `http://127.0.0.1:${port}`;
  api = startProcess(API_MAIN, {
    PORT: String(port),
    ...LOOPBACK_BACKENDS_ENV,
    SLB_DB_PATH: join(dir, 'slb.db'),
    SLB_ADMIN_TOKEN: ADMIN,
    SLB_DNS_PORT: String(await freePort()),
    SLB_ADDRESS_POOLS: '127.1.81.0/24', // VIPs of its own: e2e files run side by side
    ...healthEnv,
    LOG_LEVEL: 'warn',
  });
  await eventually('the API', () => fetch(`${apiUrl}/healthz`).then((r) => (r.ok ? true : undefined)));
  const registered = await registerNode(apiUrl, ADMIN, { kind: 'l4', address: ADDRESS, name: 'log-node' });
  node = startProcess(L4_MAIN, {
    SLB_API_URL: apiUrl,
    SLB_NODE_JOIN_TOKEN: registered.joinToken,
    SLB_NODE_ID: 'log-node',
    SLB_NODE_ADDRESS: ADDRESS,
    SLB_STATE_DIR: join(dir, 'node'),
    SLB_METRICS_PORT: '0',
    SLB_SESSION_SYNC_REDIS_URL: 'off',
    LOG_LEVEL: 'info',
  });
}, 30_000);

afterAll(async () => {
  await node?.stop('SIGKILL');
  await api?.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  await cleanupRedis(healthEnv);
});

describe('l4-node logs', () => {
  it('says "config applied" once per version', async () => {
    const call = async (path: string, body: unknown) => {
      const res = await fetch(`${apiUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(201);
      return (await res.json()) as { id: string };
    };
    const lb = await call('/v1/load-balancers', { name: 'log' });
    const sg = await call(`/v1/load-balancers/${lb.id}/server-groups`, {
      name: 'pool',
      servers: [{ address: '127.0.0.1', port: await freePort() }],
    });
    await call(`/v1/load-balancers/${lb.id}/listeners`, {
      protocol: 'tcp',
      port: await freePort(ADDRESS),
      serverGroupId: sg.id,
    });
    const applied = () =>
      node.output
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg: string; version?: number; listeners?: number })
        .filter((l) => l.msg === 'config applied');
    await eventually('the listener applied', async () => (applied().some((l) => l.listeners === 1) ? true : undefined));
    const versions = applied().map((l) => l.version);
    expect(versions.length).toBeGreaterThanOrEqual(1);
    expect(versions).toEqual([...new Set(versions)]);
  });
});
