import { randomUUID } from 'node:crypto';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSlbClient } from '@slb/client';
import { reusePortByVersion } from '@slb/node-runtime';
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
import { afterEach, describe, expect, it } from 'vitest';

// A load balancer's VIP survives the death of the L4 node carrying it, with real processes: the built API,
// two l4-node processes, Redis session sync. UDP flows keep their backend and a client-IP-persistent TCP
// client keeps its backend across the failover, in both ways a VIP is carried:
// - active-standby (nodes with SLB_REUSE_PORT=off, any runtime): one node binds; when its control channel
//   closes the hub gives the listeners to the other, which loads the session-sync state and binds.
// - active-active (SO_REUSEPORT, Node.js >= 22.12): both bind; the survivor takes the dead node's flows and
//   finds their backends in session sync.
// Backends answer `<name> via <address the node connected from>`, so each answer also says which node
// forwarded it (a node connects upstream from its own address).

const ADMIN = 'vip-failover-admin-token-0123456789';
/** Client addresses: each is one client IP to the TCP listener's persistence (UDP flows come from the first). */
const CLIENT_IPS = ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  backend: string;
  via: string;
}
const parse = (text: string): Answer => {
  const [backend, via] = text.trim().split(' via ');
  return { backend: backend!, via: via ?? '?' };
};

interface Fleet {
  apiUrl: string;
  api: Proc;
  nodes: Map<string, { proc: Proc; id: string; address: string }>;
  client: ReturnType<typeof createSlbClient>;
  /** Closed with the fleet. */
  backends: (Server | UdpSocket)[];
  cleanup(): Promise<void>;
}

const fleets: Fleet[] = [];
afterEach(async () => {
  for (const f of fleets.splice(0)) await f.cleanup();
}, 30_000);

/** The API with an address pool of this test's own, and two registered L4 nodes on `addresses`. */
async function startFleet(pool: string, addresses: string[], nodeEnv: Record<string, string>): Promise<Fleet> {
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
async function backendsFor(fleet: Fleet, names: string[]): Promise<{ tcp: number[]; udp: number[] }> {
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
async function createLb(fleet: Fleet, names: string[]) {
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

async function lbView(fleet: Fleet, lbId: string) {
  const { data } = await fleet.client.GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
  return data!;
}

/** One request on a new TCP connection from `from` (the client IP the node's persistence sees). */
const tcpAsk = async (host: string, port: number, from: string, timeoutMs = 2000): Promise<Answer> =>
  parse(await askTcp(host, port, timeoutMs, from));

/** A UDP client on one fixed source port (one flow for the node): ask() sends a datagram, awaits the answer. */
async function udpFlow(host: string, port: number) {
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
type Flow = Awaited<ReturnType<typeof udpFlow>>;

/**
 * Indices 0..n-1, evens first. The flows and clients were given backends in index order (round robin:
 * b1, b2, b1, …); asked again in this order, a node that did not know them would hand out b1, b2, … anew
 * and give some of them the other backend, whichever backend its round robin starts at.
 */
const reordered = (n: number) => [...Array(n).keys()].sort((a, b) => (a % 2) - (b % 2) || a - b);

/** Each flow's first answer through the VIP, checked stable over two more asks. */
async function establish(flows: Flow[]): Promise<Answer[]> {
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
async function reask(flows: Flow[], order: number[], withinMs: number, tryMs = 200): Promise<(Answer | undefined)[]> {
  const out: (Answer | undefined)[] = [];
  const deadline = Date.now() + withinMs;
  for (const i of order) {
    while (out[i] === undefined && Date.now() < deadline) out[i] = await flows[i]!.ask(tryMs).catch(() => undefined);
  }
  return out;
}

describe('VIP failover with real processes', () => {
  it('active-standby: when the active node is SIGKILLed the standby binds the VIP; UDP flows and TCP persistence keep their backends', async () => {
    const fleet = await startFleet('127.1.231.0/24', ['127.0.0.231', '127.0.0.232'], { SLB_REUSE_PORT: 'off' });
    const { data: nodeList } = await fleet.client.GET('/v1/nodes');
    expect(nodeList!.items.map((n) => n.vipMode)).toEqual(['active-standby', 'active-standby']);
    const { lbId, vip, port } = await createLb(fleet, ['b1', 'b2']);
    expect(vip).toMatch(/^127\.1\.231\./);

    const ready = await eventually(
      'the LB active with one active node',
      async () => {
        const lb = await lbView(fleet, lbId);
        const active = lb.nodes.filter((n) => n.kind === 'l4' && n.role === 'active');
        return lb.status === 'active' && active.length === 1 && lb.nodes.length === 2 ? lb : undefined;
      },
      20_000,
    );
    const activeId = ready.nodes.find((n) => n.role === 'active')!.nodeId;
    const standbyId = ready.nodes.find((n) => n.role === 'standby')!.nodeId;
    const active = fleet.nodes.get(activeId)!;
    const standby = fleet.nodes.get(standbyId)!;

    // Before: UDP flows (each its own source port) and persistent TCP clients, all through the active node.
    const flows = await Promise.all(Array.from({ length: 6 }, () => udpFlow(vip, port)));
    try {
      const udpBefore = await establish(flows);
      expect(udpBefore.every((a) => a.via === active.address)).toBe(true);
      expect(new Set(udpBefore.map((a) => a.backend))).toEqual(new Set(['b1', 'b2']));
      const tcpBefore: Answer[] = [];
      for (const from of CLIENT_IPS) {
        const first = await tcpAsk(vip, port, from);
        for (let i = 0; i < 3; i++) expect(await tcpAsk(vip, port, from)).toEqual(first);
        tcpBefore.push(first);
      }
      expect(tcpBefore.every((a) => a.via === active.address)).toBe(true);
      expect(new Set(tcpBefore.map((a) => a.backend))).toEqual(new Set(['b1', 'b2']));
      await sleep(500); // session sync publishes asynchronously

      const killedAt = Date.now();
      await active.proc.stop('SIGKILL');

      // After: the first flow is answered again within a bound; every flow by its backend, through the standby.
      const order = reordered(flows.length);
      const first = (await reask(flows, [order[0]!], 10_000, 50))[order[0]!];
      const gap = Date.now() - killedAt;
      console.log(`active-standby takeover: a UDP flow answered again ${gap} ms after the SIGKILL`);
      expect(first, 'no UDP answer within 10 s of the kill').toBeDefined();
      expect(gap).toBeLessThanOrEqual(5_000);
      const udpAfter = await reask(flows, order, 5_000);
      expect(udpAfter).toEqual(udpBefore.map((a) => ({ backend: a.backend, via: standby.address })));
      for (const i of reordered(CLIENT_IPS.length)) {
        for (let k = 0; k < 2; k++) {
          expect(await tcpAsk(vip, port, CLIENT_IPS[i]!)).toEqual({
            backend: tcpBefore[i]!.backend,
            via: standby.address,
          });
        }
      }

      const after = await eventually(
        'the other node active',
        async () => {
          const lb = await lbView(fleet, lbId);
          return lb.nodes.find((n) => n.nodeId === standbyId)?.role === 'active' ? lb : undefined;
        },
        10_000,
      );
      expect(after.nodes.filter((n) => n.role === 'active').map((n) => n.nodeId)).toEqual([standbyId]);
    } finally {
      for (const f of flows) f.close();
    }
  }, 90_000);

  it.skipIf(!reusePortByVersion(process.version))(
    'active-active (needs SO_REUSEPORT: Node.js >= 22.12): both nodes bind the VIP; after one is SIGKILLed every UDP flow keeps its backend and no new TCP connection is refused',
    async () => {
      const fleet = await startFleet('127.1.232.0/24', ['127.0.0.234', '127.0.0.235'], {});
      const { data: nodeList } = await fleet.client.GET('/v1/nodes');
      expect(nodeList!.items.map((n) => n.vipMode)).toEqual(['active-active', 'active-active']);
      const { lbId, vip, port } = await createLb(fleet, ['b1', 'b2']);
      expect(vip).toMatch(/^127\.1\.232\./);
      await eventually(
        'the LB active on both nodes',
        async () => {
          const lb = await lbView(fleet, lbId);
          return lb.status === 'active' && lb.nodes.filter((n) => n.role === 'active').length === 2 ? lb : undefined;
        },
        20_000,
      );
      const byAddress = new Map([...fleet.nodes.values()].map((n) => [n.address, n]));
      const perNode = (answers: (Answer | undefined)[]) =>
        Object.fromEntries([...byAddress.keys()].map((addr) => [addr, answers.filter((a) => a?.via === addr).length]));

      // Before: 20 UDP flows (the kernel spreads them over the two nodes) and persistent TCP clients.
      const flows = await Promise.all(Array.from({ length: 20 }, () => udpFlow(vip, port)));
      try {
        const udpBefore = await establish(flows);
        console.log('active-active: UDP flows per node before the kill', perNode(udpBefore));
        expect(new Set(udpBefore.map((a) => a.backend))).toEqual(new Set(['b1', 'b2']));
        // A client's first connection picks its backend and that node publishes it; its later connections
        // (on either node, as the kernel hashes each source port) follow it.
        const tcpBefore: Answer[] = [];
        for (const from of CLIENT_IPS) tcpBefore.push(await tcpAsk(vip, port, from));
        await sleep(500);
        const tcpSpread: Answer[] = [];
        for (let round = 0; round < 6; round++) {
          for (const i of reordered(CLIENT_IPS.length)) {
            const a = await tcpAsk(vip, port, CLIENT_IPS[i]!);
            expect(a.backend).toBe(tcpBefore[i]!.backend);
            tcpSpread.push(a);
          }
        }
        console.log('active-active: TCP connections per node before the kill', perNode(tcpSpread));

        // The victim: the node that carried most UDP flows (the kernel chose; both carry some, almost surely).
        const counts = perNode(udpBefore);
        const victimAddress = Object.entries(counts).sort((a, b) => b[1] - a[1])[0]![0];
        const survivorAddress = [...byAddress.keys()].find((a) => a !== victimAddress)!;
        const moved = counts[victimAddress]!;
        expect(moved).toBeGreaterThan(0);
        await sleep(500); // session sync publishes asynchronously

        const killedAt = Date.now();
        await byAddress.get(victimAddress)!.proc.stop('SIGKILL');

        // Meanwhile new TCP connections from right after the kill: none refused, each to its client's backend.
        const tcpAfter = (async () => {
          const results: { i: number; r: PromiseSettledResult<Answer> }[] = [];
          for (let round = 0; round < 3; round++) {
            for (const i of reordered(CLIENT_IPS.length)) {
              const [r] = await Promise.allSettled([tcpAsk(vip, port, CLIENT_IPS[i]!, 3000)]);
              results.push({ i, r: r! });
              await sleep(20);
            }
          }
          return results;
        })();
        // Every flow answered by its backend, now through the survivor.
        const udpAfter = await reask(flows, reordered(flows.length), 10_000);
        console.log(
          `active-active: ${udpAfter.filter(Boolean).length}/${flows.length} UDP flows answered within ${Date.now() - killedAt} ms after the SIGKILL (${moved} had been on the killed node)`,
        );
        expect(udpAfter).toEqual(udpBefore.map((a) => ({ backend: a.backend, via: survivorAddress })));

        const tcpResults = await tcpAfter;
        const failed = tcpResults
          .filter(({ r }) => r.status === 'rejected')
          .map(({ r }) => String((r as PromiseRejectedResult).reason));
        console.log(
          `active-active: ${tcpResults.length - failed.length}/${tcpResults.length} new TCP connections after the SIGKILL succeeded`,
        );
        expect(failed, 'TCP connections that failed after the kill').toEqual([]);
        for (const { i, r } of tcpResults) {
          expect((r as PromiseFulfilledResult<Answer>).value).toEqual({
            backend: tcpBefore[i]!.backend,
            via: survivorAddress,
          });
        }
        const lb = await lbView(fleet, lbId);
        expect(lb.addresses).toEqual([vip]);
      } finally {
        for (const f of flows) f.close();
      }
    },
    90_000,
  );

  it('two tenants with the same TCP and UDP port each reach their own backends on their own VIP', async () => {
    const fleet = await startFleet('127.1.233.0/24', ['127.0.0.211', '127.0.0.212'], {});
    const tenants = await Promise.all(
      ['blue', 'green'].map(async (name) => {
        const tenant = await fleet.client.POST('/v1/tenants', { body: { name } });
        const token = await fleet.client.POST('/v1/tenants/{tenantId}/tokens', {
          params: { path: { tenantId: tenant.data!.id } },
          body: { role: 'member' },
        });
        return createSlbClient({ baseUrl: fleet.apiUrl, token: token.data!.token });
      }),
    );
    const port = await freePortOn(['127.1.233.1', '127.1.233.2']);
    const lbs = [];
    for (const [i, client] of tenants.entries()) {
      const names = [`t${i}-a`, `t${i}-b`];
      const { tcp, udp } = await backendsFor(fleet, names);
      const lb = await client.POST('/v1/load-balancers', { body: { name: `tenant-${i}` } });
      const lbId = lb.data!.id;
      const group = async (kind: string, ports: number[]) =>
        (
          await client.POST('/v1/load-balancers/{lbId}/server-groups', {
            params: { path: { lbId } },
            body: { name: kind, servers: ports.map((p) => ({ address: '127.0.0.1', port: p })) },
          })
        ).data!.id;
      for (const [protocol, ports] of [
        ['tcp', tcp],
        ['udp', udp],
      ] as const) {
        const l = await client.POST('/v1/load-balancers/{lbId}/listeners', {
          params: { path: { lbId } },
          body: { protocol, port, serverGroupId: await group(protocol, ports), healthCheck: { enabled: false } },
        });
        expect(l.response.status, JSON.stringify(l.error)).toBe(201);
      }
      lbs.push({ lbId, vip: lb.data!.address!, names, client });
    }
    expect(lbs[0]!.vip).not.toBe(lbs[1]!.vip);
    for (const lb of lbs) {
      await eventually(
        `${lb.lbId} active`,
        async () => {
          const { data } = await lb.client.GET('/v1/load-balancers/{lbId}', { params: { path: { lbId: lb.lbId } } });
          return data?.status === 'active' ? true : undefined;
        },
        15_000,
      );
      for (let i = 0; i < 6; i++) {
        expect(lb.names).toContain((await tcpAsk(lb.vip, port, CLIENT_IPS[i % CLIENT_IPS.length]!)).backend);
      }
      const flow = await udpFlow(lb.vip, port);
      try {
        expect(lb.names).toContain((await eventually('a UDP answer', () => flow.ask(500), 10_000, 100)).backend);
      } finally {
        flow.close();
      }
    }
  }, 90_000);
});
