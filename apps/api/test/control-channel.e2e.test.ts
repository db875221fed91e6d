import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSlbClient } from '@slb/client';
import { CONTROL_CHANNEL_PATH, ENROLL_PATH } from '@slb/model';
import dnsPacket from 'dns-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
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
} from './fleet.js';

const ADMIN = 'fleet-admin-token-0123456789';
const healthEnv = isolatedHealthEnv();
/** Node name → the id the API allocated at registration. */
const ids = new Map<string, string>();
const apiUrl = () => `http://127.0.0.1:${apiPort}`;
let dir: string;
let apiPort: number;
let api: Proc;
const nodes = new Map<string, Proc>();
const backends: Server[] = [];
const backendPorts: number[] = [];
let frontendPort: number;
let dnsPort: number;

/** A records the API's DNS responder gives for `name`. */
function resolveA(name: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4');
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error('dns timeout'));
    }, 1000);
    socket.on('message', (m) => {
      clearTimeout(timer);
      socket.close();
      resolve((dnsPacket.decode(m).answers ?? []).map((a) => String((a as { data: unknown }).data)).sort());
    });
    socket.send(
      dnsPacket.encode({ type: 'query', id: 7, questions: [{ type: 'A', name, class: 'IN' }] }),
      dnsPort,
      '127.0.0.1',
    );
  });
}

function startApi(): Proc {
  return startProcess(API_MAIN, {
    PORT: String(apiPort),
    ...LOOPBACK_BACKENDS_ENV,
    SLB_DB_PATH: join(dir, 'slb.db'),
    SLB_ADMIN_TOKEN: ADMIN,
    SLB_DNS_PORT: String(dnsPort),
    ...healthEnv,
    LOG_LEVEL: 'info',
  });
}

/** Starts a node (registered as `id` the first time, then on the credential in its state dir). */
async function startNode(id: string, address: string, joinToken?: string): Promise<Proc> {
  if (!ids.has(id) && joinToken === undefined) {
    const registered = await registerNode(apiUrl(), ADMIN, { kind: 'l4', address, name: id });
    ids.set(id, registered.id);
    joinToken = registered.joinToken;
  }
  const proc = startProcess(L4_MAIN, {
    SLB_API_URL: apiUrl(),
    ...(joinToken ? { SLB_NODE_JOIN_TOKEN: joinToken } : {}),
    SLB_NODE_ID: id,
    SLB_NODE_ADDRESS: address,
    SLB_STATE_DIR: join(dir, `node-${id}`),
    SLB_METRICS_PORT: '0',
    LOG_LEVEL: 'info',
  });
  nodes.set(id, proc);
  return proc;
}

/** Sends a line through host:port and returns the backend's answer (its name). */
function ask(host: string, port: number, timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host, port });
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('timeout'));
    }, timeoutMs);
    socket.on('connect', () => socket.write('who\n'));
    socket.on('data', (d) => {
      data += d.toString();
      if (data.endsWith('\n')) {
        clearTimeout(timer);
        socket.end();
        resolve(data.trim());
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

const admin = () => createSlbClient({ baseUrl: `http://127.0.0.1:${apiPort}`, token: ADMIN });
const apiUp = () => fetch(`http://127.0.0.1:${apiPort}/healthz`).then((r) => (r.ok ? true : undefined));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'slb-fleet-'));
  apiPort = await freePort();
  dnsPort = await freePort();
  frontendPort = await freePort('127.0.0.11');
  for (const name of ['b1', 'b2']) {
    const server = createServer((socket) => {
      socket.on('data', () => socket.end(`${name}\n`));
      socket.on('error', () => {});
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    backends.push(server);
    backendPorts.push((server.address() as { port: number }).port);
  }
  api = startApi();
  await eventually('the API', apiUp);
  await startNode('node-a', '127.0.0.11');
  await startNode('node-b', '127.0.0.12');
}, 30_000);

afterAll(async () => {
  await Promise.all([...nodes.values()].map((n) => n.stop('SIGKILL')));
  await api.stop('SIGKILL');
  for (const b of backends) b.close();
  rmSync(dir, { recursive: true, force: true });
  await cleanupRedis(healthEnv);
});

describe('control channel with real processes', () => {
  let lbId: string;
  let sgId: string;

  it('registers both nodes as online', async () => {
    const list = await eventually('two online nodes', async () => {
      const { data } = await admin().GET('/v1/nodes');
      const online = data?.items.filter((n) => n.status === 'online') ?? [];
      return online.length === 2 ? online : undefined;
    });
    expect(list.map((n) => n.address).sort()).toEqual(['127.0.0.11', '127.0.0.12']);
  });

  it('a TCP listener created through the API forwards through both nodes within a second', async () => {
    const client = admin();
    const lb = await client.POST('/v1/load-balancers', { body: { name: 'fleet' } });
    lbId = lb.data!.id;
    const sg = await client.POST('/v1/load-balancers/{lbId}/server-groups', {
      params: { path: { lbId } },
      body: { name: 'pool', servers: backendPorts.map((port) => ({ address: '127.0.0.1', port })) },
    });
    sgId = sg.data!.id;
    const started = Date.now();
    const created = await client.POST('/v1/load-balancers/{lbId}/listeners', {
      params: { path: { lbId } },
      body: { protocol: 'tcp', port: frontendPort, serverGroupId: sgId, scheduler: 'rr' },
    });
    expect(created.response.status).toBe(201);
    for (const host of ['127.0.0.11', '127.0.0.12']) {
      await eventually(`traffic through ${host}`, () => ask(host, frontendPort, 500).catch(() => undefined), 5000, 20);
    }
    const elapsed = Date.now() - started;
    expect(elapsed).toBeLessThan(1000);
    const active = await eventually('LB active', async () => {
      const { data } = await client.GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
      return data?.status === 'active' ? data : undefined;
    });
    expect(active.addresses.sort()).toEqual(['127.0.0.11', '127.0.0.12']);
    expect(active.nodes.every((n) => n.converged && n.online)).toBe(true);
    expect(await resolveA(active.dnsName)).toEqual(['127.0.0.11', '127.0.0.12']);
    const answers = new Set<string>();
    for (let i = 0; i < 6; i++) answers.add(await ask('127.0.0.11', frontendPort));
    expect(answers).toEqual(new Set(['b1', 'b2']));
  });

  it('a weight change converges on both nodes: weight 0 takes no new connections', async () => {
    const client = admin();
    const group = await client.GET('/v1/load-balancers/{lbId}/server-groups/{sgId}', {
      params: { path: { lbId, sgId } },
    });
    const b2 = group.data!.servers.find((s) => s.port === backendPorts[1])!;
    const before = (await client.GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } })).data!.configVersion;
    await client.PATCH('/v1/load-balancers/{lbId}/server-groups/{sgId}/servers/{srvId}', {
      params: { path: { lbId, sgId, srvId: b2.id } },
      body: { weight: 0 },
    });
    const converged = await eventually('convergence', async () => {
      const { data } = await client.GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
      return data && data.configVersion > before && data.status === 'active' ? data : undefined;
    });
    expect(converged.nodes).toHaveLength(2);
    for (const host of ['127.0.0.11', '127.0.0.12']) {
      for (let i = 0; i < 4; i++) expect(await ask(host, frontendPort)).toBe('b1');
    }
  });

  it('a node with a wrong join token gets nothing and is refused in the log', async () => {
    const intruder = await startNode('node-x', '127.0.0.13', 'slbj_wrong-token-0123456789');
    await eventually('refusal logged', async () =>
      api.output.some((l) => l.includes('refused node connections')) ? true : undefined,
    );
    await eventually('the intruder gives up', async () => (intruder.child.exitCode !== null ? true : undefined));
    expect(intruder.output.join('\n')).toContain('join token was refused');
    const { data } = await admin().GET('/v1/nodes');
    expect(data!.items.map((n) => n.address)).not.toContain('127.0.0.13');
    await expect(ask('127.0.0.13', frontendPort, 300)).rejects.toThrow();
    await intruder.stop('SIGKILL');
    nodes.delete('node-x');
    expect(api.output.join('\n')).not.toContain('wrong-token-0123456789');
    expect(api.output.join('\n')).not.toMatch(/slb[jn]_/);
  });

  it('an invalid message on the channel is rejected with a reason and changes nothing', async () => {
    const { joinToken } = await registerNode(apiUrl(), ADMIN, { kind: 'l4', address: '127.0.0.98', name: 'evil' });
    const enrolled = await fetch(`${apiUrl()}${ENROLL_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${joinToken}` },
    }).then((r) => r.json() as Promise<{ credential: string }>);
    const ws = new WebSocket(`ws://127.0.0.1:${apiPort}${CONTROL_CHANNEL_PATH}`, {
      headers: { authorization: `Bearer ${enrolled.credential}` },
    });
    await new Promise((r) => ws.once('open', r));
    const replies: string[] = [];
    ws.on('message', (d) => replies.push(d.toString()));
    ws.send('{not json');
    ws.send(JSON.stringify({ type: 'ack', version: 1 }));
    ws.send(
      JSON.stringify({
        type: 'hello',
        nodeId: 'node-evil',
        kind: 'l9',
        address: '127.0.0.99',
        capacity: 100,
        appliedVersion: 0,
      }),
    );
    ws.send(
      JSON.stringify({
        type: 'hello',
        nodeId: 'node-evil',
        kind: 'l7',
        address: '127.0.0.99',
        capacity: 100,
        appliedVersion: 0,
      }),
    );
    // The last: the credential is an L4 node's, so an L7 hello is refused (and the connection closed).
    await eventually('four errors', async () => (replies.length >= 4 ? true : undefined));
    expect(JSON.parse(replies[3]!).reason).toMatch(/credential is for an l4 node/);
    expect(replies.map((r) => JSON.parse(r).type)).toEqual(['error', 'error', 'error', 'error']);
    ws.close();
    const { data } = await admin().GET('/v1/nodes');
    expect(data!.items.map((n) => n.id)).not.toContain('node-evil');
    expect(data!.items.find((n) => n.name === 'evil')?.lastHeartbeatAt).toBeNull();
  });

  it('with the API down, a restarted node still forwards from its saved snapshot, then reconverges', async () => {
    // The node saves what it applied within half a second; wait until its file holds its applied version.
    const { data: nodeA } = await admin().GET('/v1/nodes/{nodeId}', {
      params: { path: { nodeId: ids.get('node-a')! } },
    });
    await eventually('node-a saved its config', async () => {
      const saved = JSON.parse(readFileSync(join(dir, 'node-node-a', 'last-known-good.json'), 'utf8'));
      return saved.version >= nodeA!.appliedConfigVersion ? true : undefined;
    });
    await api.stop('SIGKILL');
    await nodes.get('node-a')!.stop('SIGKILL');
    await startNode('node-a', '127.0.0.11');
    await eventually(
      'node-a forwarding from disk',
      () => ask('127.0.0.11', frontendPort, 300).catch(() => undefined),
      10_000,
    );
    expect(await ask('127.0.0.11', frontendPort)).toBe('b1');
    api = startApi();
    await eventually('the API again', apiUp);
    await eventually('LB active after reconnect', async () => {
      const { data } = await admin().GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
      return data?.status === 'active' && data.nodes.length === 2 ? data : undefined;
    });
  });

  it('a killed L4 node goes offline within seconds and its address leaves the LB', async () => {
    await nodes.get('node-b')!.stop('SIGKILL');
    const started = Date.now();
    const lb = await eventually('address removed', async () => {
      const { data } = await admin().GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
      return data && !data.addresses.includes('127.0.0.12') ? data : undefined;
    });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(lb.addresses).toEqual(['127.0.0.11']);
    expect(await resolveA(lb.dnsName)).toEqual(['127.0.0.11']);
    const node = await admin().GET('/v1/nodes/{nodeId}', { params: { path: { nodeId: ids.get('node-b')! } } });
    expect(node.data!.status).toBe('offline');
    expect(node.data!.appliedConfigVersion).toBeGreaterThan(0);
    expect(await ask('127.0.0.11', frontendPort)).toBe('b1');
  });
});
