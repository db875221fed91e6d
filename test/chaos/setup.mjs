// What every scenario runs against: the backend hosts, the traffic load balancer (an HTTP and a TCP
// listener over three backends, and a fail-open pair of listeners over two more), the load balancer the
// write scenarios write to, and the helpers that read the cloud's state.
import { once } from 'node:events';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { startBackendHost } from './cloud.mjs';
import { Resolver } from './load.mjs';
import { metricSum, resolveA, stablePort, until } from './util.mjs';

/** Fast checks, so a scenario sees transitions within seconds: 1 s interval, 2 results either way. */
export const CHECK = { interval: 1, timeout: 1, healthyThreshold: 2, unhealthyThreshold: 2 };
export const MAIN = ['b1', 'b2', 'b3'];
export const FAIL_OPEN = ['f1', 'f2'];

/** A TCP port that is open or closed on demand: the fail-open TCP listener's health-check port. */
async function healthPort() {
  const port = await stablePort();
  let server = null;
  const sockets = new Set();
  const p = {
    port,
    async open() {
      if (server) return;
      server = createServer((s) => {
        sockets.add(s);
        s.on('error', () => {});
        s.on('close', () => sockets.delete(s));
        s.end();
      });
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
    },
    async close() {
      if (!server) return;
      const s = server;
      server = null;
      for (const socket of sockets) socket.destroy();
      await new Promise((r) => s.close(r));
    },
  };
  await p.open();
  return p;
}

export async function setUp(cloud, outDir) {
  const hosts = {};
  const ports = {};
  for (const name of [...MAIN, ...FAIL_OPEN]) ports[name] = { http: await stablePort(), tcp: await stablePort() };
  const startHost = async (name) => {
    hosts[name] = await startBackendHost({
      name,
      httpPort: ports[name].http,
      tcpPort: ports[name].tcp,
      logFile: join(outDir, 'logs', `backend-${name}.log`),
    });
    return hosts[name];
  };
  for (const name of Object.keys(ports)) await startHost(name);
  const hc = await healthPort();

  const lb = await cloud.ok('POST', '/v1/load-balancers', { name: 'chaos' });
  const group = async (name, members, kind) =>
    (
      await cloud.ok('POST', `/v1/load-balancers/${lb.id}/server-groups`, {
        name,
        servers: members.map((m) => ({ address: '127.0.0.1', port: ports[m][kind] })),
      })
    ).id;
  const groups = {
    web: await group('web', MAIN, 'http'),
    tcp: await group('tcp', MAIN, 'tcp'),
    foWeb: await group('fail-open-web', FAIL_OPEN, 'http'),
    foTcp: await group('fail-open-tcp', FAIL_OPEN, 'tcp'),
  };
  if (!lb.address) throw new Error(`load balancer ${lb.id} got no VIP (pools ${cloud.addressPools})`);
  const vip = lb.address;
  // Listener ports are the LB's own: free on its VIP is all they need.
  const listen = async (body) => {
    const port = await stablePort([vip]);
    const l = await cloud.ok('POST', `/v1/load-balancers/${lb.id}/listeners`, { ...body, port });
    return { id: l.id, port };
  };
  const httpCheck = { ...CHECK, type: 'http', path: '/health' };
  const listeners = {
    http: await listen({ protocol: 'http', serverGroupId: groups.web, scheduler: 'rr', healthCheck: httpCheck }),
    tcp: await listen({ protocol: 'tcp', serverGroupId: groups.tcp, scheduler: 'rr', healthCheck: CHECK }),
    foHttp: await listen({ protocol: 'http', serverGroupId: groups.foWeb, scheduler: 'rr', healthCheck: httpCheck }),
    // Every fail-open TCP server is checked on one port the runner opens and closes: "all abnormal" at will.
    foTcp: await listen({
      protocol: 'tcp',
      serverGroupId: groups.foTcp,
      scheduler: 'rr',
      healthCheck: { ...CHECK, port: hc.port },
    }),
  };
  const writesLb = await cloud.ok('POST', '/v1/load-balancers', { name: 'chaos-writes' });
  const dnsName = lb.dnsName;
  const env = {
    cloud,
    lb,
    writesLb,
    hosts,
    ports,
    groups,
    listeners,
    hc,
    dnsName,
    vip,
    startHost,
    /** A client's resolver: DNS answers the VIP; before the first answer it knows the VIP alone. */
    resolver: () => new Resolver(cloud.dnsPort, dnsName, [vip]),

    async health() {
      return (await cloud.ok('GET', `/v1/load-balancers/${lb.id}/health`)).items;
    },
    /** Status of a backend host's server on a listener ('http', 'tcp', 'foHttp', 'foTcp'). */
    async statusOf(host, listener) {
      const l = listeners[listener];
      const port = listener === 'http' || listener === 'foHttp' ? ports[host].http : ports[host].tcp;
      return (await env.health()).find((h) => h.listenerId === l.id && h.port === port)?.status;
    },
    async waitStatus(host, on, status, timeoutMs = 15_000) {
      const t0 = Date.now();
      await until(
        `${host} ${status} on ${on.join(', ')}`,
        async () => {
          for (const l of on) if ((await env.statusOf(host, l)) !== status) return undefined;
          return true;
        },
        timeoutMs,
        100,
      );
      return Date.now() - t0;
    },
    async allNormal(timeoutMs = 20_000) {
      await until(
        'every server normal on every listener',
        async () => {
          const items = await env.health();
          return items.length === 10 && items.every((h) => h.status === 'normal') ? true : undefined;
        },
        timeoutMs,
        100,
      );
    },
    async lbState() {
      return cloud.ok('GET', `/v1/load-balancers/${lb.id}`);
    },
    /** The LB active on its VIP alone, and served by every L4 node in `l4Names` (online and converged). */
    async waitServed(
      l4Names = cloud.services.filter((x) => x.kind === 'l4-node').map((x) => x.name),
      timeoutMs = 15_000,
    ) {
      const ids = await env.l4Ids();
      const want = l4Names.map((n) => ids.get(n));
      await until(
        `LB active on ${vip} and served by ${l4Names.join(', ')}`,
        async () => {
          const s = await env.lbState();
          if (s.status !== 'active' || s.addresses.join() !== vip) return undefined;
          const ok = want.every((id) => s.nodes.some((n) => n.nodeId === id && n.online && n.converged));
          return ok ? true : undefined;
        },
        timeoutMs,
        100,
      );
    },
    /** L4 node service name → node id (GET /v1/nodes). */
    async l4Ids() {
      const page = await cloud.ok('GET', '/v1/nodes?limit=500');
      return new Map(page.items.filter((n) => n.kind === 'l4').map((n) => [n.name, n.id]));
    },
    /** The L4 nodes (service names) the LB's nodes[] shows with role 'active'. */
    async activeL4() {
      const ids = await env.l4Ids();
      const names = new Map([...ids].map(([name, id]) => [id, name]));
      const s = await env.lbState();
      return s.nodes.filter((n) => n.kind === 'l4' && n.role === 'active' && n.online).map((n) => names.get(n.nodeId));
    },
    async waitDns(addresses = [vip], timeoutMs = 10_000) {
      const want = [...addresses].sort().join();
      await until(
        `DNS answering ${want}`,
        async () => ((await resolveA(cloud.dnsPort, dnsName)).addresses.join() === want ? true : undefined),
        timeoutMs,
        100,
      );
    },
    /** The whole cloud back to the start state: API, nodes, placement, DNS, every check normal. */
    async recovered(timeoutMs = 30_000) {
      await cloud.apiReady(timeoutMs);
      await cloud.nodesOnline(timeoutMs);
      await env.waitServed(undefined, timeoutMs);
      await env.waitDns([vip], timeoutMs);
      await env.allNormal(timeoutMs);
    },
    /** Sum of a counter over some of the cloud's processes (their /metrics). */
    async counter(services, metric, match = '') {
      let sum = 0;
      for (const s of services) sum += metricSum(await cloud.metrics(s), metric, match);
      return sum;
    },
  };
  return env;
}
