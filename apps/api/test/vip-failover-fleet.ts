import { randomUUID } from 'node:crypto';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSlbClient } from '@slb/client';
import {
  API_MAIN,
  tcpAsk as askTcp,
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
import { deleteRedisKeys } from '@slb/test-support/redis-keys';
import { expect } from 'vitest';

// The harness of vip-failover.e2e.test.ts: an API and two L4 nodes as processes, backends that say which
// node forwarded, an LB over them, and clients that keep one flow.

export const ADMIN = 'vip-failover-admin-token-0123456789';
/** Client addresses: each is one client IP to the TCP listener's persistence (UDP flows come from the first). */
export const CLIENT_IPS = ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4'];
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Answer {
  backend: string;
  via: string;
}
export const parse = (text: string): Answer => {
  const [backend, via] = text.trim().split(' via ');
  return { backend: backend!, via: via ?? '?' };
};

export interface Fleet {
  apiUrl: string;
  api: Proc;
  nodes: Map<string, { proc: Proc; id: string; address: string }>;
  client: ReturnType<typeof createSlbClient>;
  /** Closed with the fleet. */
  backends: (Server | UdpSocket)[];
  cleanup(): Promise<void>;
}

const fleets: Fleet[] = [];
/** Stops every fleet started since the last call (after each test). */
export async function stopFleets(): Promise<void> {
  for (const f of fleets.splice(0)) await f.cleanup();
}

/** The API with an address pool of this test's own, and two registered L4 nodes on `addresses`. */
export async function startFleet(pool: string, addresses: string[], nodeEnv: Record<string, string>): Promise<Fleet> {
  const dir = mkdtempSync(join(tmpdir(), 'slb-vip-failover-'));
  const healthEnv = isolatedHealthEnv();
  const syncPrefix = `test-${randomUUID()}:sync`;
  const apiPort = await freePort();
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const api = startProcess(API_MAIN, {
    PORT: String(apiPort),
    ...LOOPBACK_BACKENDS_ENV,
    SLB_DB_PATH: join(dir, 'slb.db'),
    SLB_ADMIN_TOKEN: ADMIN,
    SLB_DNS_PORT: String(await freePort()),
    SLB_ADDRESS_POOLS: pool,
    SLB_SESSION_SYNC_PREFIX: syncPrefix, // sent to the nodes in their snapshots
    ...healthEnv,
    LOG_LEVEL: 'info',
  });
  const nodes: Fleet['nodes'] = new Map();
  const backends: (Server | UdpSocket)[] = [];
  const fleet: Fleet = {
    apiUrl,
    api,
    nodes,
    client: createSlbClient({ baseUrl: apiUrl, token: ADMIN }),
    backends,
    cleanup: async () => {
      await Promise.all([...nodes.values()].map((n) => n.proc.stop('SIGKILL')));
      await api.stop('SIGKILL');
      for (const b of backends) b.close();
      rmSync(dir, { recursive: true, force: true });
      await cleanupRedis(healthEnv);
      await deleteRedisKeys(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', [`${syncPrefix}*`]);
    },
  };
  fleets.push(fleet);
  await eventually('the API', () => fetch(`${apiUrl}/healthz`).then((r) => (r.ok ? true : undefined)), 20_000);
  for (const [i, address] of addresses.entries()) {
    const name = `vip-failover-${i + 1}`;
    const { id, joinToken } = await registerNode(apiUrl, ADMIN, { kind: 'l4', address, name });
    const proc = startProcess(L4_MAIN, {
      SLB_API_URL: apiUrl,
      SLB_NODE_JOIN_TOKEN: joinToken,
      SLB_NODE_ID: name,
      SLB_NODE_ADDRESS: address,
      SLB_STATE_DIR: join(dir, `node-${name}`),
      SLB_METRICS_PORT: '0',
      LOG_LEVEL: 'info',
      ...nodeEnv,
    });
    nodes.set(id, { proc, id, address });
  }
  await eventually(
    'both nodes online',
    async () => {
      const { data } = await fleet.client.GET('/v1/nodes');
      const online = data?.items.filter((n) => n.status === 'online') ?? [];
      return online.length === addresses.length ? online : undefined;
    },
    20_000,
  );
  return fleet;
}

/** TCP and UDP backends answering `<name> via <peer address>`, closed with the fleet. */
export async function backendsFor(fleet: Fleet, names: string[]): Promise<{ tcp: number[]; udp: number[] }> {
  const keep = fleet.backends;
  const tcp: number[] = [];
  const udp: number[] = [];
  for (const name of names) {
    const server = createServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', () => socket.end(`${name} via ${socket.remoteAddress}\n`));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    keep.push(server);
    tcp.push((server.address() as { port: number }).port);
    const u = createSocket('udp4');
    u.on('message', (msg, rinfo) => {
      if (msg.length > 0) u.send(`${name} via ${rinfo.address}`, rinfo.port, rinfo.address);
    });
    await new Promise<void>((r) => u.bind(0, '127.0.0.1', r));
    keep.push(u);
    udp.push(u.address().port);
  }
  return { tcp, udp };
}

/** An LB with a UDP listener and a TCP listener with client-IP persistence, over `names`' backends. */
export async function createLb(fleet: Fleet, names: string[]) {
  const { client } = fleet;
  const { tcp, udp } = await backendsFor(fleet, names);
  const lb = await client.POST('/v1/load-balancers', { body: { name: 'vip-failover' } });
  expect(lb.response.status).toBe(201);
  const lbId = lb.data!.id;
  const vip = lb.data!.address!;
  const group = async (name: string, ports: number[]) => {
    const sg = await client.POST('/v1/load-balancers/{lbId}/server-groups', {
      params: { path: { lbId } },
      body: { name, servers: ports.map((port) => ({ address: '127.0.0.1', port })) },
    });
    expect(sg.response.status).toBe(201);
    return sg.data!.id;
  };
  const port = await freePortOn([vip]); // free for TCP and UDP on the VIP
  const healthCheck = { enabled: false };
  const u = await client.POST('/v1/load-balancers/{lbId}/listeners', {
    params: { path: { lbId } },
    body: { protocol: 'udp', port, serverGroupId: await group('udp', udp), scheduler: 'rr', healthCheck },
  });
  const t = await client.POST('/v1/load-balancers/{lbId}/listeners', {
    params: { path: { lbId } },
    body: {
      protocol: 'tcp',
      port,
      serverGroupId: await group('tcp', tcp),
      scheduler: 'rr',
      persistenceTimeout: 60,
      healthCheck,
    },
  });
  expect([u.response.status, t.response.status]).toEqual([201, 201]);
  return { lbId, vip, port };
}

export async function lbView(fleet: Fleet, lbId: string) {
  const { data } = await fleet.client.GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
  return data!;
}

/** One request on a new TCP connection from `from` (the client IP the node's persistence sees). */
export const tcpAsk = async (host: string, port: number, from: string, timeoutMs = 2000): Promise<Answer> =>
  parse(await askTcp(host, port, timeoutMs, from));

/** A UDP client on one fixed source port (one flow for the node): ask() sends a datagram, awaits the answer. */
export async function udpFlow(host: string, port: number) {
  const socket = createSocket('udp4');
  await new Promise<void>((r) => socket.bind(0, CLIENT_IPS[0], r));
  let waiting: ((a: Answer) => void) | undefined;
  socket.on('message', (m) => {
    const w = waiting;
    waiting = undefined;
    w?.(parse(m.toString()));
  });
  return {
    ask: (timeoutMs = 1000) =>
      new Promise<Answer>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting = undefined;
          reject(new Error('timeout'));
        }, timeoutMs);
        waiting = (a) => {
          clearTimeout(timer);
          resolve(a);
        };
        socket.send('who', port, host);
      }),
    close: () => socket.close(),
  };
}
export type Flow = Awaited<ReturnType<typeof udpFlow>>;

/**
 * Indices 0..n-1, evens first. The flows and clients were given backends in index order (round robin:
 * b1, b2, b1, …); asked again in this order, a node that did not know them would hand out b1, b2, … anew
 * and give some of them the other backend, whichever backend its round robin starts at.
 */
export const reordered = (n: number) => [...Array(n).keys()].sort((a, b) => (a % 2) - (b % 2) || a - b);

/** Each flow's first answer through the VIP, checked stable over two more asks. */
export async function establish(flows: Flow[]): Promise<Answer[]> {
  const out: Answer[] = [];
  for (const f of flows) {
    const a = await eventually('a UDP answer through the VIP', () => f.ask(500), 10_000, 100);
    for (let i = 0; i < 2; i++) expect(await f.ask()).toEqual(a);
    out.push(a);
  }
  return out;
}

/**
 * Asks every flow (in `order`) until it is answered, for up to `withinMs`, waiting `tryMs` for each answer;
 * undefined for a silent one.
 */
export async function reask(
  flows: Flow[],
  order: number[],
  withinMs: number,
  tryMs = 200,
): Promise<(Answer | undefined)[]> {
  const out: (Answer | undefined)[] = [];
  const deadline = Date.now() + withinMs;
  for (const i of order) {
    while (out[i] === undefined && Date.now() < deadline) out[i] = await flows[i]!.ask(tryMs).catch(() => undefined);
  }
  return out;
}
