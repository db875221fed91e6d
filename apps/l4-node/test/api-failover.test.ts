import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  API_MAIN,
  cleanupRedis,
  eventually,
  freePort,
  freePortOn,
  isolatedHealthEnv,
  LOOPBACK_BACKENDS_ENV,
  type Proc,
  registerNode,
  startProcess,
} from '@slb/test-support/fleet';
import { afterAll, expect, it } from 'vitest';
import { type NodeProcess, startNode } from './node-process.js';

// A node given two API replicas (SLB_API_URL=<A>,<B>) outlives its replica, with real processes from dist/:
// API A serves it; A is SIGKILLed and traffic still flows on the node's last config while no API runs; API B
// starts on the same database (A's exclusive SQLite lock died with it) and the node joins it within 3 s, and a
// write through B reaches the node.

const ADMIN = 'failover-admin-token-0123456789';
const POOL = '127.1.84.0/24'; // VIPs of its own (see fleet/processes.ts: pools in use)
const NODE_ADDRESS = '127.0.0.71';
const healthEnv = isolatedHealthEnv();
const dir = mkdtempSync(join(tmpdir(), 'slb-api-failover-'));
const procs: Proc[] = [];
let node: NodeProcess | undefined;
let backend: Server | undefined;

afterAll(async () => {
  await node?.stop();
  await Promise.all(procs.map((p) => p.stop('SIGKILL')));
  backend?.close();
  rmSync(dir, { recursive: true, force: true });
  await cleanupRedis(healthEnv);
});

function startApi(port: number, dnsPort: number): Proc {
  const proc = startProcess(API_MAIN, {
    PORT: String(port),
    ...LOOPBACK_BACKENDS_ENV,
    SLB_DB_PATH: join(dir, 'slb.db'),
    SLB_ADMIN_TOKEN: ADMIN,
    SLB_DNS_PORT: String(dnsPort),
    SLB_ADDRESS_POOLS: POOL,
    ...healthEnv,
    LOG_LEVEL: 'warn',
  });
  procs.push(proc);
  return proc;
}

/** An admin request to one API; the parsed body, or an error naming the status. */
async function call<T>(base: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(5000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

/** One line through host:port; resolves with the backend's answer. */
function ask(host: string, port: number, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host, port });
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer through ${host}:${port}`));
    }, timeoutMs);
    socket.on('connect', () => socket.write('ping\n'));
    socket.on('data', (d) => {
      data += d.toString();
      if (!data.endsWith('\n')) return;
      clearTimeout(timer);
      socket.end();
      resolve(data.trim());
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

const healthy = (base: string) => () =>
  fetch(`${base}/healthz`, { signal: AbortSignal.timeout(1000) }).then((r) => (r.ok ? true : undefined));

it('moves to API B when API A dies, forwarding on its last config meanwhile, and takes writes made through B', async () => {
  const [portA, portB, dnsPort] = [await freePort(), await freePort(), await freePort()];
  const apiA = `http://127.0.0.1:${portA}`;
  const apiB = `http://127.0.0.1:${portB}`;
  backend = createServer((socket) => {
    socket.on('data', () => socket.end('echo\n'));
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => backend!.listen(0, '127.0.0.1', r));
  const backendPort = (backend.address() as { port: number }).port;

  const a = startApi(portA, dnsPort);
  await eventually('API A', healthy(apiA), 20_000);
  const { id: nodeId, joinToken } = await registerNode(apiA, ADMIN, { kind: 'l4', address: NODE_ADDRESS, name: 'n1' });
  node = startNode([], {
    SLB_API_URL: `${apiA},${apiB}`,
    SLB_NODE_JOIN_TOKEN: joinToken,
    SLB_NODE_ID: 'n1',
    SLB_NODE_ADDRESS: NODE_ADDRESS,
    SLB_STATE_DIR: join(dir, 'node-n1'),
    LOG_LEVEL: 'info',
  });
  const onA = await node.waitLog((l) => l.msg === 'control channel connected', 15_000);
  expect(onA).toMatchObject({ replica: 0, replicas: 2 });
  expect(await node.metric('slb_control_plane_replica')).toBe(0);

  const lb = await call<{ id: string; address: string }>(apiA, 'POST', '/v1/load-balancers', { name: 'failover' });
  const vip = lb.address;
  const sg = await call<{ id: string }>(apiA, 'POST', `/v1/load-balancers/${lb.id}/server-groups`, {
    name: 'pool',
    servers: [{ address: '127.0.0.1', port: backendPort }],
  });
  const [port1, port2] = [await freePortOn([vip]), await freePortOn([vip])];
  await call(apiA, 'POST', `/v1/load-balancers/${lb.id}/listeners`, {
    protocol: 'tcp',
    port: port1,
    serverGroupId: sg.id,
  });
  await eventually(`traffic through ${vip}:${port1}`, () => ask(vip, port1, 500), 10_000);

  // A dies: the node loses its channel, and keeps forwarding on what it applied last.
  await a.stop('SIGKILL');
  await node.waitLog((l) => l.msg === 'control channel lost', 5000);
  const outage = Date.now() + 1500;
  let answered = 0;
  for (let i = 0; i < 30 && Date.now() < outage; i++) {
    expect(await ask(vip, port1)).toBe('echo');
    answered++;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(answered).toBeGreaterThanOrEqual(5);
  expect(await node.metric('slb_control_plane_replica')).toBe(-1);

  // B on the same database: the node dials it within 3 s of it being ready.
  startApi(portB, dnsPort);
  await eventually('API B', healthy(apiB), 20_000, 20);
  const ready = Date.now();
  // Only ever on A until now: a connection to replica 1 is the one to B.
  const onB = await node.waitLog((l) => l.msg === 'control channel connected' && l.replica === 1, 10_000);
  const reconnectMs = Date.now() - ready;
  console.log(`node reconnected to API B ${reconnectMs} ms after B was ready`);
  expect(onB).toMatchObject({ replica: 1, replicas: 2 });
  expect(reconnectMs).toBeLessThan(3000);
  const online = await eventually('the node online in B', async () => {
    const { items } = await call<{ items: { id: string; status: string }[] }>(apiB, 'GET', '/v1/nodes');
    return items.find((n) => n.id === nodeId && n.status === 'online');
  });
  expect(online).toBeDefined();
  expect(await node.metric('slb_control_plane_replica')).toBe(1);

  // A write through B reaches the node; the old listener still serves.
  await call(apiB, 'POST', `/v1/load-balancers/${lb.id}/listeners`, {
    protocol: 'tcp',
    port: port2,
    serverGroupId: sg.id,
  });
  await eventually(`traffic through ${vip}:${port2}`, () => ask(vip, port2, 500), 10_000);
  expect(await ask(vip, port1)).toBe('echo');
}, 90_000);
