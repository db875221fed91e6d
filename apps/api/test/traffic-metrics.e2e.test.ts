// The local cloud end to end: real TCP and HTTP traffic through a load balancer's VIP shows up in
// GET …/metrics within a couple of heartbeats (nodes count it, heartbeats carry it, the API buckets it).
import { createSlbClient, type SlbClient } from '@slb/client';
import {
  type Backend,
  burst,
  eventually,
  freePortOn,
  httpAsk,
  httpBackend,
  type LocalCloud,
  startLocalCloud,
  tcpAsk,
  tcpBackend,
} from '@slb/test-support/fleet';
import { afterAll, beforeAll, expect, it } from 'vitest';

const POOL = '127.1.94.0/24';
let cloud: LocalCloud;
let client: SlbClient;
const backends: Backend[] = [];

beforeAll(async () => {
  backends.push(await tcpBackend('t1'), await httpBackend('h1'));
  cloud = await startLocalCloud({ l4: ['127.0.0.223'], l7: ['127.0.0.224'], addressPools: POOL });
  client = createSlbClient({ baseUrl: cloud.apiUrl, token: cloud.adminToken });
}, 90_000);

afterAll(async () => {
  await cloud?.stop();
  await Promise.all(backends.map((b) => b.kill()));
}, 30_000);

const sum = (series: (number | null)[], step: number) => series.reduce<number>((a, v) => a + (v ?? 0) * step, 0);

it('shows new connections, bytes and 2xx responses sent through the VIP', async () => {
  const lb = await client.POST('/v1/load-balancers', { body: { name: 'metrics-e2e' } });
  const lbId = lb.data!.id;
  const vip = lb.data!.address!;
  const group = async (name: string, b: Backend) =>
    (
      await client.POST('/v1/load-balancers/{lbId}/server-groups', {
        params: { path: { lbId } },
        body: { name, servers: [{ address: '127.0.0.1', port: b.port }] },
      })
    ).data!.id;
  const tcpPort = await freePortOn([vip]);
  const httpPort = await freePortOn([vip]);
  const tcp = await client.POST('/v1/load-balancers/{lbId}/listeners', {
    params: { path: { lbId } },
    body: { protocol: 'tcp', port: tcpPort, serverGroupId: await group('tcp', backends[0]!) },
  });
  const http = await client.POST('/v1/load-balancers/{lbId}/listeners', {
    params: { path: { lbId } },
    body: { protocol: 'http', port: httpPort, serverGroupId: await group('web', backends[1]!) },
  });
  expect(tcp.error ?? http.error).toBeUndefined();
  await eventually(
    'traffic through the VIP',
    async () => {
      const [t, h] = await Promise.all([
        tcpAsk(vip, tcpPort).catch(() => ''),
        httpAsk(`http://${vip}:${httpPort}/`).catch(() => null),
      ]);
      return t === 't1' && h?.status === 200 ? true : undefined;
    },
    30_000,
    200,
  );
  // The traffic the test counts on, after the nodes' first beats (their baselines) went by.
  await new Promise((r) => setTimeout(r, 1500));
  const sent = await Promise.all([
    burst(20, () => tcpAsk(vip, tcpPort)),
    burst(20, () => httpAsk(`http://${vip}:${httpPort}/`).then((r) => String(r.status))),
  ]);
  expect(sent[0].failed + sent[1].failed).toBe(0);
  const started = Date.now();

  const seen = await eventually(
    'the traffic in the metrics',
    async () => {
      const [lbm, tcpm, httpm] = await Promise.all([
        client.GET('/v1/load-balancers/{lbId}/metrics', { params: { path: { lbId }, query: { step: 10 } } }),
        client.GET('/v1/load-balancers/{lbId}/listeners/{lsnId}/metrics', {
          params: { path: { lbId, lsnId: tcp.data!.id } },
        }),
        client.GET('/v1/load-balancers/{lbId}/listeners/{lsnId}/metrics', {
          params: { path: { lbId, lsnId: http.data!.id } },
        }),
      ]);
      const t = tcpm.data!;
      const h = httpm.data!;
      const ok =
        sum(t.newConnectionsPerSecond, t.step) >= 20 &&
        sum(t.bytesInPerSecond, t.step) > 0 &&
        sum(t.bytesOutPerSecond, t.step) > 0 &&
        sum(h.requestsPerSecond['2xx'], h.step) >= 20 &&
        sum(h.newConnectionsPerSecond, h.step) >= 1 &&
        h.upstreamTimeP50Ms.some((v) => v !== null) &&
        sum(lbm.data!.newConnectionsPerSecond, 10) >= sum(t.newConnectionsPerSecond, t.step);
      return ok ? { t, h, lb: lbm.data! } : undefined;
    },
    10_000,
    250,
  );
  console.log(`[metrics e2e] traffic in the metrics ${Date.now() - started} ms after it was sent`);
  expect(Date.now() - started).toBeLessThan(5000);
  expect(seen.t.requestsPerSecond['2xx'].every((v) => v === null)).toBe(true);
  // Open connections: a gauge, from the nodes' second 10 s bucket on (their first after the API's start is
  // left out, as after a restart of the API it could count a node twice).
  await eventually(
    'open connections in the metrics',
    async () => {
      const { data } = await client.GET('/v1/load-balancers/{lbId}/metrics', { params: { path: { lbId } } });
      return data?.activeConnections.some((v) => v !== null) ? true : undefined;
    },
    15_000,
    500,
  );
}, 120_000);
