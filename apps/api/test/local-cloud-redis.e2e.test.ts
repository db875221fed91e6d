// The local cloud (scripts/local-cloud.mjs) on a Redis of the test's own, which the test SIGKILLs and starts
// again on the same port, empty (no persistence): traffic must go on throughout, and health checking must
// resume (a backend killed after Redis came back is still detected). Figures are printed for the lead.
import { createConnection } from 'node:net';
import { createSlbClient, type SlbClient } from '@slb/client';
import {
  type Backend,
  burst,
  eventually,
  freePort,
  freePortOn,
  httpAsk,
  httpBackend,
  type LoadStats,
  type LocalCloud,
  loadLoop,
  loadSummary,
  type Proc,
  startLocalCloud,
  startRedis,
  tcpAsk,
  tcpBackend,
  warmedUp,
} from '@slb/test-support/fleet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const L4 = ['127.0.0.73', '127.0.0.74'];
const L7 = ['127.0.0.83', '127.0.0.84'];
/** This file's VIP pool: no other test's local cloud hands out these addresses. */
const POOL = '127.1.73.0/24';
const FAST_CHECK = { enabled: true, interval: 1, timeout: 1, healthyThreshold: 2, unhealthyThreshold: 2 } as const;

let redisPort: number;
let redis: Proc;
let cloud: LocalCloud;
let client: SlbClient;
let lbId: string;
/** The LB's VIP: the only address clients use (whichever L4 node carries it). */
let vip: string;
const ports = { tcp: 0, http: 0 };
const listeners = { tcp: '', http: '' };
const b: Record<'t1' | 't2' | 'h1' | 'h2', Backend> = {} as never;

const report = (line: string) => console.log(`[local-cloud redis e2e] ${line}`);

const redisAnswers = () =>
  new Promise<boolean>((resolve) => {
    {
      const socket = createConnection({ host: '127.0.0.1', port: redisPort });
      socket.setTimeout(500, () => {
        socket.destroy();
        resolve(false);
      });
      socket.on('connect', () => socket.write('PING\r\n'));
      socket.on('data', (d) => {
        socket.destroy();
        resolve(d.toString().startsWith('+PONG'));
      });
      socket.on('error', () => resolve(false));
    }
  });

async function health() {
  const { data, error } = await client.GET('/v1/load-balancers/{lbId}/health', { params: { path: { lbId } } });
  if (!data) throw new Error(`health: ${JSON.stringify(error)}`);
  return data.items;
}
const statusOf = async (port: number, listenerId: string) =>
  (await health()).find((h) => h.port === port && h.listenerId === listenerId)?.status;

const tcpVia = () => tcpAsk(vip, ports.tcp);
const httpVia = () => httpAsk(`http://${vip}:${ports.http}/`).then((r) => r.body.name);

beforeAll(async () => {
  redisPort = await freePort();
  redis = startRedis(redisPort);
  await eventually('our redis-server', async () => ((await redisAnswers()) ? true : undefined), 10_000, 50);
  b.t1 = await tcpBackend('t1');
  b.t2 = await tcpBackend('t2');
  b.h1 = await httpBackend('h1');
  b.h2 = await httpBackend('h2');
  const started = Date.now();
  // The default supervision (crashed children restarted): a process that dies of the Redis outage shows up
  // in the output as "exited", which the test reports.
  cloud = await startLocalCloud({ l4: L4, l7: L7, redisUrl: `redis://127.0.0.1:${redisPort}`, addressPools: POOL });
  report(`local cloud ready in ${Date.now() - started} ms on its own Redis at :${redisPort}`);
  client = createSlbClient({ baseUrl: cloud.apiUrl, token: cloud.adminToken });
}, 90_000);

afterAll(async () => {
  await cloud?.stop();
  await redis?.stop('SIGKILL');
  await Promise.all(Object.values(b).map((x) => x?.kill()));
}, 30_000);

describe('the local cloud through a Redis restart', () => {
  it('keeps forwarding while Redis is killed and restarted empty', async () => {
    const lb = await client.POST('/v1/load-balancers', { body: { name: 'redis-e2e' } });
    expect(lb.error).toBeUndefined();
    lbId = lb.data!.id;
    vip = lb.data!.address!;
    expect(vip).toMatch(/^127\.1\.73\./);
    const group = async (name: string, servers: Backend[]) => {
      const sg = await client.POST('/v1/load-balancers/{lbId}/server-groups', {
        params: { path: { lbId } },
        body: { name, servers: servers.map((s) => ({ address: '127.0.0.1', port: s.port })) },
      });
      expect(sg.error).toBeUndefined();
      return sg.data!.id;
    };
    const tcpGroup = await group('tcp', [b.t1, b.t2]);
    const webGroup = await group('web', [b.h1, b.h2]);
    ports.tcp = await freePortOn([vip]);
    ports.http = await freePortOn([vip]);
    const tcp = await client.POST('/v1/load-balancers/{lbId}/listeners', {
      params: { path: { lbId } },
      body: { protocol: 'tcp', port: ports.tcp, serverGroupId: tcpGroup, healthCheck: FAST_CHECK },
    });
    const http = await client.POST('/v1/load-balancers/{lbId}/listeners', {
      params: { path: { lbId } },
      body: {
        protocol: 'http',
        port: ports.http,
        serverGroupId: webGroup,
        healthCheck: { ...FAST_CHECK, type: 'http', path: '/health' },
      },
    });
    expect(tcp.error ?? http.error).toBeUndefined();
    listeners.tcp = tcp.data!.id;
    listeners.http = http.data!.id;
    await eventually(
      'all four checks normal',
      async () => {
        const items = await health();
        return items.length === 4 && items.every((h) => h.status === 'normal') ? true : undefined;
      },
      20_000,
      100,
    );
    // A node carries the VIP with both listeners (health checks run whether or not a node does yet).
    await eventually(
      'the LB active',
      async () => {
        const { data } = await client.GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
        return data?.status === 'active' &&
          data.nodes.some((n) => n.kind === 'l4' && n.role === 'active' && n.converged)
          ? true
          : undefined;
      },
      15_000,
      100,
    );
    const warm = await Promise.all([burst(40, tcpVia), burst(40, httpVia)]);
    expect(warm[0].failed + warm[1].failed).toBe(0);

    const tcpLoad = loadLoop(tcpVia, { concurrency: 3, maxRequests: 6000, maxMs: 40_000 });
    const httpLoad = loadLoop(httpVia, { concurrency: 3, maxRequests: 6000, maxMs: 40_000 });
    await warmedUp([tcpLoad, httpLoad]);
    const killedAt = Date.now();
    await redis.stop('SIGKILL');
    // A fixed window on purpose: 3 s of load with Redis down, which the forwarding must not notice.
    await new Promise((r) => setTimeout(r, 3000));
    const down = {
      tcp: tcpLoad.stats.sent,
      http: httpLoad.stats.sent,
      failed: tcpLoad.stats.failed + httpLoad.stats.failed,
    };
    redis = startRedis(redisPort);
    await eventually('redis-server back', async () => ((await redisAnswers()) ? true : undefined), 10_000, 50);
    const restartedAt = Date.now();
    const ready = await eventually(
      'the API ready again (its Redis check)',
      () => fetch(`${cloud.apiUrl}/readyz`).then((r) => (r.ok ? Date.now() - restartedAt : undefined)),
      20_000,
      100,
    );
    // A fixed window on purpose: load after the recovery, which must not fail either.
    await new Promise((r) => setTimeout(r, 1000));
    const [tcpStats, httpStats] = await Promise.all([tcpLoad.stop(), httpLoad.stop()]);
    report(
      `SIGKILLed Redis under load, down for ${restartedAt - killedAt} ms (clients sent ${down.tcp} TCP / ${down.http} HTTP ` +
        `requests by then, ${down.failed} failed), restarted empty on the same port; API ready again ${ready} ms later`,
    );
    report(`Redis restart — TCP clients: ${loadSummary(tcpStats)}`);
    report(`Redis restart — HTTP clients: ${loadSummary(httpStats)}`);
    const exited = cloud.proc.output.filter((l) => l.startsWith('[local-cloud]') && l.includes('exited'));
    report(`Redis restart — local-cloud children that exited: ${exited.length ? exited.join(' | ') : 'none'}`);
    expect(tcpStats.failed + httpStats.failed).toBe(0);
  }, 60_000);

  it('resumes health checking after the restart: a backend killed afterwards is detected', async () => {
    // No API write from here on: a write would make the API re-sync its check schedule, and this is about
    // what the cloud does by itself after Redis lost everything.
    const tcpLoad = loadLoop(tcpVia, { concurrency: 2, maxRequests: 6000, maxMs: 60_000, pauseMs: 20 });
    const httpLoad = loadLoop(httpVia, { concurrency: 2, maxRequests: 6000, maxMs: 60_000, pauseMs: 20 });
    const killedAt = Date.now();
    await Promise.all([b.t2.kill(), b.h2.kill()]);
    const detect = async (port: number, listenerId: string) => {
      await eventually(
        `server :${port} abnormal`,
        async () => ((await statusOf(port, listenerId)) === 'abnormal' ? true : undefined),
        45_000,
        200,
      );
      return Date.now() - killedAt;
    };
    const detected = await Promise.allSettled([detect(b.t2.port, listeners.tcp), detect(b.h2.port, listeners.http)]);
    const [t2Ms, h2Ms] = detected.map((d) => (d.status === 'fulfilled' ? d.value : `not within 45000`));
    // What the API and the workers said about Redis (warnings, deduplicated by message), for the lead.
    const said = new Map<string, string>();
    for (const line of cloud.proc.output) {
      const m = /^\[(api|health-worker-\d)\] (\{.*\})$/.exec(line);
      if (!m) continue;
      try {
        const entry = JSON.parse(m[2]!) as { msg?: string; err?: string };
        const key = `${m[1]!.replace(/-\d$/, '')}: ${entry.msg} ${entry.err?.slice(0, 80) ?? ''}`;
        said.set(key, key);
      } catch {
        // not JSON
      }
    }
    report(`cloud warnings around the Redis restart: ${[...said.values()].slice(0, 15).join(' | ') || 'none'}`);
    const [tcpStats, httpStats] = await Promise.all([tcpLoad.stop(), httpLoad.stop()]);
    const inFlight = (s: LoadStats) => s.failedAt.filter((t) => t < killedAt).length;
    report(`after the Redis restart, killed backends t2 and h2: abnormal after ${t2Ms} ms (t2) and ${h2Ms} ms (h2)`);
    report(`after the Redis restart — TCP clients: ${loadSummary(tcpStats)}`);
    report(`after the Redis restart — HTTP clients: ${loadSummary(httpStats)}`);
    expect(typeof t2Ms, 't2 detected').toBe('number');
    expect(typeof h2Ms, 'h2 detected').toBe('number');
    expect(tcpStats.failed - inFlight(tcpStats)).toBe(0);
    expect(httpStats.failed - inFlight(httpStats)).toBe(0);
  }, 60_000);
});
