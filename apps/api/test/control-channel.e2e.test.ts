import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSlbClient } from '@slb/client';
import { CONTROL_CHANNEL_PATH, ENROLL_PATH } from '@slb/model';
import {
  API_MAIN,
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
} from '@slb/test-support/fleet';
import dnsPacket from 'dns-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

// The control channel with real processes: the built API and two l4-node processes. Clients reach the LB on
// its VIP (from a pool of this file's own). Nodes with SO_REUSEPORT (Node.js >= 22.12) all bind it
// (active-active); elsewhere one node binds it and the other stands by (active-standby): the tests hold in
// both, and say which node served by the address the backend saw (a node connects upstream from its own).

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
/** The addresses the backends were connected from: the nodes that forwarded. */
const peers = new Set<string>();
/** A pool of this file's own, so a parallel test's LBs never take its VIP. */
const POOL = '127.1.79.0/24'; // VIPs of its own (see fleet.ts: pools in use)
const NODE_ADDRESSES: Record<string, string> = { 'node-a': '127.0.0.11', 'node-b': '127.0.0.12' };
let frontendPort: number;
let dnsPort: number;
/** The LB's VIP, where its clients connect. */
let vip: string;

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
    SLB_ADDRESS_POOLS: POOL,
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
  for (const name of ['b1', 'b2']) {
    const server = createServer((socket) => {
      if (socket.remoteAddress) peers.add(socket.remoteAddress);
      socket.on('data', () => socket.end(`${name}\n`));
      socket.on('error', () => {});
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    backends.push(server);
    backendPorts.push((server.address() as { port: number }).port);
  }
  api = startApi();
  await eventually('the API', apiUp);
  await startNode('node-a', NODE_ADDRESSES['node-a']!);
  await startNode('node-b', NODE_ADDRESSES['node-b']!);
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

  it('a TCP listener created through the API forwards on the VIP within a second, from every node that binds it', async () => {
    const client = admin();
    const lb = await client.POST('/v1/load-balancers', { body: { name: 'fleet' } });
    lbId = lb.data!.id;
    vip = lb.data!.address!;
    expect(vip.startsWith(POOL.replace(/0\/24$/, ''))).toBe(true);
    expect(lb.data!.addresses).toEqual([vip]);
    frontendPort = await freePortOn([vip]);
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
    await eventually(`traffic through ${vip}`, () => ask(vip, frontendPort, 500).catch(() => undefined), 5000, 20);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeLessThan(1000);
    const active = await eventually('LB active', async () => {
      const { data } = await client.GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
      return data?.status === 'active' ? data : undefined;
    });
    expect(active.address).toBe(vip);
    expect(active.addresses).toEqual([vip]);
    expect(active.nodes.map((n) => n.address).sort()).toEqual(['127.0.0.11', '127.0.0.12']);
    expect(active.nodes.every((n) => n.converged && n.online && n.error === undefined)).toBe(true);
    expect(await resolveA(active.dnsName)).toEqual([vip]);
    // Both nodes host the LB; which bind its VIP depends on the runtime's SO_REUSEPORT.
    const modes = new Set((await client.GET('/v1/nodes')).data!.items.map((n) => n.vipMode));
    expect(modes.size).toBe(1);
    const binders = active.nodes.filter((n) => n.role === 'active').map((n) => n.address);
    if (modes.has('active-active')) expect(binders.sort()).toEqual(['127.0.0.11', '127.0.0.12']);
    else {
      expect([...modes]).toEqual(['active-standby']);
      expect(binders).toHaveLength(1);
      expect(active.nodes.filter((n) => n.role === 'standby')).toHaveLength(1);
    }
    peers.clear();
    const answers = new Set<string>();
    for (let i = 0; i < 6; i++) answers.add(await ask(vip, frontendPort));
    expect(answers).toEqual(new Set(['b1', 'b2']));
    // Every node that binds the VIP forwards (the kernel spreads connections over reuseport sockets), and
    // only those: a standby forwards nothing.
    for (let i = 0; i < 30 && peers.size < binders.length; i++) await ask(vip, frontendPort);
    expect([...peers].sort()).toEqual(binders.sort());
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
    expect(converged.nodes.every((n) => n.converged)).toBe(true);
    // Through the VIP, whichever node takes each connection.
    for (let i = 0; i < 8; i++) expect(await ask(vip, frontendPort)).toBe('b1');
  });

  it('a node restarted while the API runs resumes its session: it is sent what changed while it was down', async () => {
    const name = 'node-b';
    const nodeId = ids.get(name)!;
    const { data: node } = await admin().GET('/v1/nodes/{nodeId}', { params: { path: { nodeId } } });
    await eventually(`${name} saved its config`, async () => {
      const file = JSON.parse(readFileSync(join(dir, `node-${name}`, 'last-known-good.json'), 'utf8'));
      return file.version >= node!.appliedConfigVersion ? true : undefined;
    });
    await nodes.get(name)!.stop('SIGKILL');
    const port = await freePortOn([vip]);
    const created = await admin().POST('/v1/load-balancers/{lbId}/listeners', {
      params: { path: { lbId } },
      body: { protocol: 'tcp', port, serverGroupId: sgId, scheduler: 'rr' },
    });
    expect(created.response.status).toBe(201);
    const connectedBefore = api.output.filter((l) => l.includes('"node connected"')).length;
    await startNode(name, NODE_ADDRESSES[name]!);
    const hello = await eventually(`${name} says hello again`, async () =>
      api.output
        .filter((l) => l.includes('"node connected"'))
        .slice(connectedBefore)
        .find((l) => l.includes(nodeId)),
    );
    expect(JSON.parse(hello)).toMatchObject({ nodeId, resumed: true });
    await eventually('both nodes converged on the new listener', async () => {
      const { data } = await admin().GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
      return data?.status === 'active' && data.nodes.length === 2 && data.nodes.every((n) => n.online && n.converged)
        ? data
        : undefined;
    });
    expect(await ask(vip, port)).toBe('b1'); // b2 has weight 0 (above)
    // Back to one listener, as the tests below expect.
    const removed = await admin().DELETE('/v1/load-balancers/{lbId}/listeners/{lsnId}', {
      params: { path: { lbId, lsnId: created.data!.id } },
    });
    expect(removed.response.status).toBe(204);
    await eventually('the listener gone from both nodes', async () => {
      const { data } = await admin().GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
      return data?.status === 'active' && data.nodes.every((n) => n.converged) ? data : undefined;
    });
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
    const { data: fleet } = await admin().GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
    expect(fleet!.nodes.map((n) => n.address)).not.toContain('127.0.0.13');
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
    // The node that binds the VIP (either one when both do) is restarted alone, so the VIP answers only if
    // it forwards from disk: the other node is down meanwhile.
    const { data: lb } = await admin().GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
    const binderId = lb!.nodes.find((n) => n.role === 'active')!.nodeId;
    const binder = [...ids].find(([, id]) => id === binderId)![0];
    const other = binder === 'node-a' ? 'node-b' : 'node-a';
    // The node saves what it applied within half a second; wait until its file holds its applied version.
    const { data: saved } = await admin().GET('/v1/nodes/{nodeId}', { params: { path: { nodeId: binderId } } });
    await eventually(`${binder} saved its config`, async () => {
      const file = JSON.parse(readFileSync(join(dir, `node-${binder}`, 'last-known-good.json'), 'utf8'));
      return file.version >= saved!.appliedConfigVersion ? true : undefined;
    });
    // The node says it reads backend sets, so the API sent its listener's backends as one, and the node
    // saved them so: the restart below serves from that file.
    const file = JSON.parse(readFileSync(join(dir, `node-${binder}`, 'last-known-good.json'), 'utf8'));
    expect(file.listeners).toEqual([expect.objectContaining({ backendSet: file.backendSets[0].id })]);
    expect(file.backendSets[0].backends.map((b: { port: number }) => b.port).sort()).toEqual([...backendPorts].sort());
    await api.stop('SIGKILL');
    await Promise.all([nodes.get(binder)!.stop('SIGKILL'), nodes.get(other)!.stop('SIGKILL')]);
    await expect(ask(vip, frontendPort, 300)).rejects.toThrow();
    await startNode(binder, NODE_ADDRESSES[binder]!);
    await eventually(
      `${binder} forwarding from disk`,
      () => ask(vip, frontendPort, 300).catch(() => undefined),
      10_000,
    );
    peers.clear();
    expect(await ask(vip, frontendPort)).toBe('b1');
    expect([...peers]).toEqual([NODE_ADDRESSES[binder]]);
    api = startApi();
    await eventually('the API again', apiUp);
    await startNode(other, NODE_ADDRESSES[other]!);
    await eventually('LB active after reconnect', async () => {
      const { data } = await admin().GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
      return data?.status === 'active' && data.nodes.length === 2 && data.nodes.every((n) => n.online && n.converged)
        ? data
        : undefined;
    });
  });

  it('a killed L4 node goes offline within seconds and leaves the LB, which stays on its VIP, served by the other', async () => {
    // The node binding the VIP (either one when both do): in active-standby the other takes the VIP over.
    const { data: before } = await admin().GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
    const killedId = before!.nodes.find((n) => n.role === 'active')!.nodeId;
    const killed = [...ids].find(([, id]) => id === killedId)![0];
    const survivor = killed === 'node-a' ? 'node-b' : 'node-a';
    await nodes.get(killed)!.stop('SIGKILL');
    const started = Date.now();
    const lb = await eventually('the node removed', async () => {
      const { data } = await admin().GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
      return data && !data.nodes.some((n) => n.nodeId === killedId) ? data : undefined;
    });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(lb.nodes.map((n) => [n.address, n.role])).toEqual([[NODE_ADDRESSES[survivor], 'active']]);
    expect(lb.address).toBe(vip);
    expect(lb.addresses).toEqual([vip]);
    expect(await resolveA(lb.dnsName)).toEqual([vip]);
    const node = await admin().GET('/v1/nodes/{nodeId}', { params: { path: { nodeId: killedId } } });
    expect(node.data!.status).toBe('offline');
    expect(node.data!.appliedConfigVersion).toBeGreaterThan(0);
    const served = await eventually('the survivor serving', async () => {
      const { data } = await admin().GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
      return data?.status === 'active' ? data : undefined;
    });
    expect(served.nodes.every((n) => n.converged && n.error === undefined)).toBe(true);
    peers.clear();
    expect(await eventually('the VIP answering', () => ask(vip, frontendPort, 500).catch(() => undefined))).toBe('b1');
    expect([...peers]).toEqual([NODE_ADDRESSES[survivor]]);
  });
});
