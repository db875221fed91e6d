import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
} from '@slb/test-support/fleet';
import { afterAll, beforeAll, expect, it } from 'vitest';

// Real API and L4 node processes: a listener the node cannot bind (its port is held on its LB's VIP by
// another socket) fails alone. The node names it in its ack and heartbeats, its LB stays provisioning and
// shows why (the node's error on the LB, the listener's bindErrors, the node's lastError), while the other
// tenant's LB in the same config is active and forwarding. Once the port frees, the node's retry binds it:
// the LB becomes active with no error left.

const ADMIN = 'failure-admin-token-0123456789';
const NODE_ADDRESS = `127.77.${1 + Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`;
/** A VIP pool of this file's own, so a parallel test's LBs never take its VIPs. */
const POOL = '127.1.78.0/24'; // VIPs of its own (see fleet.ts: pools in use)
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
    SLB_ADDRESS_POOLS: POOL,
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
  await new Promise((r) => (blocker?.listening ? blocker.close(r) : r(undefined)));
  await cleanupRedis(healthEnv);
  rmSync(dir, { recursive: true, force: true });
});

it('one unbindable listener keeps its LB provisioning; the other LB of the same config is active; it heals when the port frees', async () => {
  await eventually(
    'the node online',
    async () => {
      const nodes = await http('GET', '/v1/nodes', ADMIN);
      return nodes.body.items?.some((n: { status: string }) => n.status === 'online') ? true : undefined;
    },
    30_000,
  );

  const tenantLb = async (tenant: string) => {
    const t = await http('POST', '/v1/tenants', ADMIN, { name: tenant });
    const token = (await http('POST', `/v1/tenants/${t.body.id}/tokens`, ADMIN, {})).body.token as string;
    const lb = await http('POST', '/v1/load-balancers', token, { name: tenant });
    expect(lb.status).toBe(201);
    expect(lb.body.addresses).toEqual([lb.body.address]);
    return { token, lbId: lb.body.id as string, vip: lb.body.address as string };
  };
  const withListener = async <L extends { token: string; lbId: string }>(lb: L, port: number) => {
    const sg = await http('POST', `/v1/load-balancers/${lb.lbId}/server-groups`, lb.token, {
      name: 'g',
      servers: [{ address: '127.0.0.1', port: backend.port }],
    });
    const lsn = await http('POST', `/v1/load-balancers/${lb.lbId}/listeners`, lb.token, {
      protocol: 'tcp',
      port,
      serverGroupId: sg.body.id,
    });
    expect(lsn.status).toBe(201);
    return { ...lb, listenerId: lsn.body.id as string };
  };
  const blockedLb = await tenantLb('blocked');
  const fineLb = await tenantLb('fine');
  expect(blockedLb.vip).not.toBe(fineLb.vip);
  // Another process's socket holds the blocked LB's VIP:port before its listener exists: a real bind failure.
  const [held, free] = [await freePortOn([blockedLb.vip]), await freePortOn([fineLb.vip])];
  blocker = createServer();
  await new Promise<void>((r) => blocker.listen(held, blockedLb.vip, () => r()));
  const blocked = await withListener(blockedLb, held);
  const fine = await withListener(fineLb, free);

  const get = async (lb: { token: string; lbId: string }) =>
    (await http('GET', `/v1/load-balancers/${lb.lbId}`, lb.token)).body;
  await eventually(
    'the other LB active',
    async () => ((await get(fine)).status === 'active' ? true : undefined),
    30_000,
  );
  expect(await tcpAsk(fine.vip, free)).toBe('b');
  const reason = `cannot bind tcp ${blocked.vip}:${held}: EADDRINUSE`;
  const shown = await eventually('the failure shown on the node', async () => {
    const n = await http('GET', `/v1/nodes/${nodeId}`, ADMIN);
    return n.body.lastError?.includes(blocked.listenerId) ? n.body : undefined;
  });
  expect(shown.lastError).toContain(reason);
  const stuck = await get(blocked);
  expect(stuck.status).toBe('provisioning');
  expect(stuck.nodes).toEqual([
    expect.objectContaining({ nodeId, online: true, converged: false, error: `${blocked.listenerId}: ${reason}` }),
  ]);
  const listener = await http(
    'GET',
    `/v1/load-balancers/${blocked.lbId}/listeners/${blocked.listenerId}`,
    blocked.token,
  );
  expect(listener.body.bindErrors).toEqual([{ nodeId, reason }]);
  expect((await get(fine)).nodes[0]).not.toHaveProperty('error');

  // The port frees: the node's retry (every 5 s at most) binds it, and its next heartbeat says so.
  await new Promise((r) => blocker.close(r));
  const healed = await eventually(
    'the blocked LB active',
    async () => {
      const lb = await get(blocked);
      return lb.status === 'active' ? lb : undefined;
    },
    20_000,
  );
  expect(healed.nodes).toEqual([expect.objectContaining({ nodeId, online: true, converged: true })]);
  expect(healed.nodes[0]).not.toHaveProperty('error');
  const after = await http('GET', `/v1/load-balancers/${blocked.lbId}/listeners/${blocked.listenerId}`, blocked.token);
  expect(after.body.bindErrors).toEqual([]);
  expect(await tcpAsk(blocked.vip, held)).toBe('b');
  expect(await tcpAsk(fine.vip, free)).toBe('b');
  const node = await http('GET', `/v1/nodes/${nodeId}`, ADMIN);
  expect(node.body.lastError).toBeNull();
}, 120_000);
