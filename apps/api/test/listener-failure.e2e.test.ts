import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  API_MAIN,
  type Backend,
  cleanupRedis,
  eventually,
  freePort,
  freePortOn,
  isolatedHealthEnv,
  L4_MAIN,
  LOOPBACK_BACKENDS_ENV,
  type Proc,
  registerNode,
  startProcess,
  tcpAsk,
  tcpBackend,
} from './fleet.js';

// Real API and L4 node processes: a listener the node cannot bind (its port is held on the node's address)
// fails alone. The node names it in its ack, its LB stays provisioning and the node shows why, while the
// other tenant's LB in the same config is active and forwarding.

const ADMIN = 'failure-admin-token-0123456789';
const NODE_ADDRESS = `127.77.${1 + Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`;
const healthEnv = isolatedHealthEnv();
let dir: string;
let apiUrl: string;
let api: Proc;
let node: Proc;
let backend: Backend;
let blocker: Server;
let nodeId: string;

async function http(method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(`${apiUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, body: (await res.json()) as any };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'slb-failure-'));
  const apiPort = await freePort();
  apiUrl = `http://127.0.0.1:${apiPort}`;
  api = startProcess(API_MAIN, {
    PORT: String(apiPort),
    SLB_DB_PATH: join(dir, 'slb.db'),
    SLB_ADMIN_TOKEN: ADMIN,
    SLB_DNS_PORT: '0',
    ...LOOPBACK_BACKENDS_ENV,
    ...healthEnv,
  });
  await eventually('the API', async () => ((await fetch(`${apiUrl}/healthz`)).ok ? true : undefined), 30_000);
  const registered = await registerNode(apiUrl, ADMIN, { kind: 'l4', address: NODE_ADDRESS, name: 'failure-l4' });
  nodeId = registered.id;
  node = startProcess(L4_MAIN, {
    SLB_API_URL: apiUrl,
    SLB_NODE_JOIN_TOKEN: registered.joinToken,
    SLB_NODE_ID: 'failure-l4',
    SLB_NODE_ADDRESS: NODE_ADDRESS,
    SLB_STATE_DIR: join(dir, 'node'),
    SLB_SESSION_SYNC_REDIS_URL: 'off',
    SLB_METRICS_PORT: '0',
  });
  backend = await tcpBackend('b');
}, 60_000);

afterAll(async () => {
  await node?.stop('SIGKILL');
  await api?.stop('SIGKILL');
  await backend?.kill();
  await new Promise((r) => (blocker ? blocker.close(r) : r(undefined)));
  await cleanupRedis(healthEnv);
  rmSync(dir, { recursive: true, force: true });
});

it('one unbindable listener keeps its LB provisioning; the other LB of the same config is active', async () => {
  await eventually(
    'the node online',
    async () => {
      const nodes = await http('GET', '/v1/nodes', ADMIN);
      return nodes.body.items?.some((n: { status: string }) => n.status === 'online') ? true : undefined;
    },
    30_000,
  );
  const [held, free] = [await freePortOn([NODE_ADDRESS]), await freePortOn([NODE_ADDRESS])];
  blocker = createServer();
  await new Promise<void>((r) => blocker.listen(held, NODE_ADDRESS, () => r()));

  const lbWith = async (tenant: string, port: number) => {
    const t = await http('POST', '/v1/tenants', ADMIN, { name: tenant });
    const token = (await http('POST', `/v1/tenants/${t.body.id}/tokens`, ADMIN, {})).body.token as string;
    const lb = await http('POST', '/v1/load-balancers', token, { name: tenant });
    const sg = await http('POST', `/v1/load-balancers/${lb.body.id}/server-groups`, token, {
      name: 'g',
      servers: [{ address: '127.0.0.1', port: backend.port }],
    });
    const lsn = await http('POST', `/v1/load-balancers/${lb.body.id}/listeners`, token, {
      protocol: 'tcp',
      port,
      serverGroupId: sg.body.id,
    });
    expect(lsn.status).toBe(201);
    return { token, lbId: lb.body.id as string, listenerId: lsn.body.id as string };
  };
  const blocked = await lbWith('blocked', held);
  const fine = await lbWith('fine', free);

  const status = async (lb: { token: string; lbId: string }) =>
    (await http('GET', `/v1/load-balancers/${lb.lbId}`, lb.token)).body.status;
  await eventually('the other LB active', async () => ((await status(fine)) === 'active' ? true : undefined), 30_000);
  expect(await tcpAsk(NODE_ADDRESS, free)).toBe('b');
  const shown = await eventually('the failure shown on the node', async () => {
    const n = await http('GET', `/v1/nodes/${nodeId}`, ADMIN);
    return n.body.lastError?.includes(blocked.listenerId) ? n.body : undefined;
  });
  expect(shown.lastError).toContain('cannot bind');
  expect(await status(blocked)).toBe('provisioning');
}, 120_000);
