// The end-to-end suite against the real local cloud (`scripts/local-cloud.mjs`: API, two health workers, two
// L4 and two L7 nodes as processes), driven through the generated client. It kills a backend, an L4 node and
// the API under load and prints what the clients saw; the Redis restart lives in local-cloud-redis.e2e.test.ts.
// Clients reach the LB on its VIP only: both L4 nodes bind it (active-active, SO_REUSEPORT: Node.js >= 22.12)
// or one does and the other stands by (active-standby), so nothing here assumes which node serves.

import { createSlbClient, type SlbClient } from '@slb/client';
import {
  type Backend,
  burst,
  eventually,
  freePortOn,
  httpAsk,
  httpBackend,
  type LoadStats,
  type LocalCloud,
  loadLoop,
  loadSummary,
  resolveA,
  startLocalCloud,
  tcpAsk,
  tcpBackend,
  udpAsk,
  udpBackend,
  warmedUp,
} from '@slb/test-support/fleet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCertificate } from './helpers.js';

const L4 = ['127.0.0.71', '127.0.0.72'];
const L7 = ['127.0.0.81', '127.0.0.82'];
/** This file's VIP pool: no other test's local cloud hands out these addresses. */
const POOL = '127.1.71.0/24';
const FAST_CHECK = { interval: 1, timeout: 1, healthyThreshold: 2, unhealthyThreshold: 2 } as const;
/** A weight-3 backend's share of the traffic against a weight-1 one: 0.75, within this much. */
const TOLERANCE = 0.1;

let cloud: LocalCloud;
let client: SlbClient;
let lbId: string;
let dnsName: string;
/** The LB's VIP: the only address clients use. */
let vip: string;
const ports = { tcp: 0, udp: 0, http: 0, https: 0 };
const listeners = { tcp: '', udp: '', http: '', https: '' };
const b: Record<'t1' | 't2' | 'u1' | 'u2' | 'h1' | 'h2', Backend> = {} as never;

const report = (line: string) => console.log(`[local-cloud e2e] ${line}`);
const share = (s: LoadStats, name: string) => (s.answers[name] ?? 0) / (s.sent - s.failed);

async function health() {
  const { data, error } = await client.GET('/v1/load-balancers/{lbId}/health', { params: { path: { lbId } } });
  if (!data) throw new Error(`health: ${JSON.stringify(error)}`);
  return data.items;
}
/** Resolves once the server on `port` has `status` on every listener in `on`. */
async function serverStatus(port: number, on: string[], status: string, timeoutMs: number) {
  return eventually(
    `server :${port} ${status} on ${on.join(', ')}`,
    async () => {
      const items = (await health()).filter((h) => h.port === port && on.includes(h.listenerId));
      return items.length === on.length && items.every((h) => h.status === status) ? true : undefined;
    },
    timeoutMs,
    100,
  );
}
async function getLb() {
  const { data, error } = await client.GET('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
  if (!data) throw new Error(`lb: ${JSON.stringify(error)}`);
  return data;
}

const tcpViaVip = () => tcpAsk(vip, ports.tcp);
const httpViaVip = () => httpAsk(`http://${vip}:${ports.http}/`).then((r) => r.body.name);
const udpViaVip = () => udpAsk(vip, ports.udp);
const httpsViaVip = () =>
  httpAsk(`https://${vip}:${ports.https}/`, { servername: 'shop.example' }).then((r) => r.body.name);
/** The L4 nodes in the LB's view: address, online, role. */
const l4View = (lb: Awaited<ReturnType<typeof getLb>>) =>
  lb.nodes
    .filter((n) => n.kind === 'l4')
    .map((n) => ({ address: n.address, online: n.online, converged: n.converged, role: n.role }))
    .sort((x, y) => x.address.localeCompare(y.address));

beforeAll(async () => {
  b.t1 = await tcpBackend('t1');
  b.t2 = await tcpBackend('t2');
  b.u1 = await udpBackend('u1');
  b.u2 = await udpBackend('u2');
  b.h1 = await httpBackend('h1');
  b.h2 = await httpBackend('h2');
  const started = Date.now();
  // --no-restart: a process the test kills stays down, so what the rest of the cloud does is deterministic.
  cloud = await startLocalCloud({ l4: L4, l7: L7, args: ['--no-restart'], addressPools: POOL });
  report(`local cloud ready in ${Date.now() - started} ms (API ${cloud.apiUrl}, DNS :${cloud.dnsPort})`);
  client = createSlbClient({ baseUrl: cloud.apiUrl, token: cloud.adminToken });
}, 60_000);

afterAll(async () => {
  await cloud?.stop();
  await Promise.all(Object.values(b).map((x) => x?.kill()));
}, 30_000);

describe('the local cloud end to end', () => {
  it('serves TCP, UDP, HTTP and HTTPS listeners in the weighted proportions, answers DNS, holds sticky sessions', async () => {
    const lb = await client.POST('/v1/load-balancers', { body: { name: 'e2e' } });
    expect(lb.error).toBeUndefined();
    lbId = lb.data!.id;
    vip = lb.data!.address!;
    expect(vip, "the LB has a VIP from this file's pool").toMatch(/^127\.1\.71\./);
    expect(lb.data!.addresses).toEqual([vip]);
    const group = async (name: string, servers: Backend[]) => {
      const sg = await client.POST('/v1/load-balancers/{lbId}/server-groups', {
        params: { path: { lbId } },
        body: {
          name,
          servers: servers.map((s, i) => ({ address: '127.0.0.1', port: s.port, weight: i === 0 ? 1 : 3 })),
        },
      });
      expect(sg.error).toBeUndefined();
      return sg.data!.id;
    };
    const tcpGroup = await group('tcp', [b.t1, b.t2]);
    const udpGroup = await group('udp', [b.u1, b.u2]);
    const webGroup = await group('web', [b.h1, b.h2]);
    const cert = await client.POST('/v1/certificates', { body: { name: 'shop', ...makeCertificate('shop.example') } });
    expect(cert.error).toBeUndefined();
    for (const key of ['tcp', 'udp', 'http', 'https'] as const) ports[key] = await freePortOn([vip]);
    const create = async (body: Record<string, unknown>) => {
      const res = await client.POST('/v1/load-balancers/{lbId}/listeners', {
        params: { path: { lbId } },
        body: body as never,
      });
      expect(res.error).toBeUndefined();
      return res.data!.id;
    };
    listeners.tcp = await create({
      protocol: 'tcp',
      port: ports.tcp,
      serverGroupId: tcpGroup,
      healthCheck: FAST_CHECK,
    });
    listeners.udp = await create({
      protocol: 'udp',
      port: ports.udp,
      serverGroupId: udpGroup,
      healthCheck: FAST_CHECK,
    });
    const httpCheck = { ...FAST_CHECK, type: 'http', path: '/health' };
    const sticky = { mode: 'insert', cookieName: 'SLBSTICKY', cookieTimeout: 600 };
    listeners.http = await create({
      protocol: 'http',
      port: ports.http,
      serverGroupId: webGroup,
      healthCheck: httpCheck,
      stickySession: sticky,
    });
    listeners.https = await create({
      protocol: 'https',
      port: ports.https,
      serverGroupId: webGroup,
      certificateId: cert.data!.id,
      healthCheck: httpCheck,
      stickySession: sticky,
    });

    const t0 = Date.now();
    const { data: nodeList } = await client.GET('/v1/nodes');
    const modes = [...new Set(nodeList!.items.filter((n) => n.kind === 'l4').map((n) => n.vipMode))];
    report(`L4 VIP mode ${modes.join(', ')} (Node.js ${process.version})`);
    // Both L4 nodes host it, have applied its config and at least one carries the VIP (active-standby: one).
    const active = await eventually(
      'LB active on both L4 nodes',
      async () => {
        const l = await getLb();
        const l4 = l4View(l);
        return l.status === 'active' &&
          l4.length === 2 &&
          l4.every((n) => n.online && n.converged) &&
          l4.some((n) => n.role === 'active')
          ? l
          : undefined;
      },
      15_000,
      100,
    );
    dnsName = active.dnsName;
    expect(active.address).toBe(vip);
    expect(active.addresses).toEqual([vip]);
    expect(l4View(active).map((n) => n.address)).toEqual(L4);
    report(`LB ${lbId} on VIP ${vip}: L4 nodes ${JSON.stringify(l4View(active))}`);
    await eventually(
      'every server normal on every listener',
      async () => {
        const items = await health();
        return items.length === 8 && items.every((h) => h.status === 'normal') ? items : undefined;
      },
      20_000,
      100,
    );
    report(`LB ${lbId} active and all 8 (listener, server) checks normal in ${Date.now() - t0} ms`);

    // DNS: the LB's name answers with its VIP, and only that.
    expect(await resolveA(cloud.dnsPort, dnsName)).toEqual([vip]);

    // Weighted proportions, 1:3, on fresh connections to the VIP (whichever L4 node takes each).
    const tcp = await burst(200, tcpViaVip);
    const udp = await burst(200, udpViaVip);
    const http = await burst(400, httpViaVip);
    const https = await burst(100, () =>
      httpAsk(`https://${vip}:${ports.https}/`, { servername: 'shop.example' }).then((r) => {
        expect(r.body.headers['x-forwarded-proto']).toBe('https');
        return r.body.name;
      }),
    );
    report(`weights 1:3 — TCP: ${loadSummary(tcp)}`);
    report(`weights 1:3 — UDP: ${loadSummary(udp)}`);
    report(`weights 1:3 — HTTP: ${loadSummary(http)}`);
    report(`weights 1:3 — HTTPS: ${loadSummary(https)}`);
    for (const [stats, heavy] of [
      [tcp, 't2'],
      [udp, 'u2'],
      [http, 'h2'],
    ] as const) {
      expect(stats.failed).toBe(0);
      expect(Math.abs(share(stats, heavy) - 0.75)).toBeLessThanOrEqual(TOLERANCE);
    }
    expect(https.failed).toBe(0);
    expect(Math.abs(share(https, 'h2') - 0.75)).toBeLessThanOrEqual(0.15);

    // Sticky sessions (insert cookie): a client holding the cookie stays on its server, whichever L4 (and so
    // L7) node each of its fresh connections to the VIP lands on, on HTTP and HTTPS.
    for (const scheme of ['http', 'https'] as const) {
      const base = `${scheme}://${vip}:${ports[scheme]}/`;
      const cookies = new Map<string, string>();
      for (let i = 0; i < 40 && cookies.size < 2; i++) {
        const r = await httpAsk(base, { servername: 'shop.example' });
        const set = (r.headers['set-cookie'] ?? []).find((c) => c.startsWith('SLBSTICKY='));
        expect(set, 'a first request gets the insert cookie').toBeDefined();
        cookies.set(r.body.name, set!.split(';')[0]!);
      }
      expect([...cookies.keys()].sort()).toEqual(['h1', 'h2']);
      for (const [name, cookie] of cookies) {
        const held = await burst(
          30,
          () => httpAsk(base, { headers: { cookie }, servername: 'shop.example' }).then((r) => r.body.name),
          4,
        );
        report(`sticky ${scheme} cookie for ${name}: ${loadSummary(held)}`);
        expect(held.answers).toEqual({ [name]: 30 });
      }
    }
  }, 60_000);

  it('removes a backend killed under load with no failed request, and takes it back after the healthy threshold', async () => {
    const httpLoad = loadLoop(httpViaVip, { concurrency: 4, maxRequests: 6000, maxMs: 30_000 });
    const tcpLoad = loadLoop(tcpViaVip, { concurrency: 4, maxRequests: 6000, maxMs: 30_000 });
    await warmedUp([httpLoad, tcpLoad]);
    const killedAt = Date.now();
    await Promise.all([b.h2.kill(), b.t2.kill()]);
    // Until kill() resolves a request may still reach the dying backend; from then on none can.
    const deadAt = Date.now();
    const beforeKill = { http: httpLoad.stats.sent, tcp: tcpLoad.stats.sent };
    const detected = await Promise.all([
      serverStatus(b.h2.port, [listeners.http, listeners.https], 'abnormal', 15_000).then(() => Date.now() - killedAt),
      serverStatus(b.t2.port, [listeners.tcp], 'abnormal', 15_000).then(() => Date.now() - killedAt),
    ]);
    // A fixed window on purpose: the load goes on after detection, and no request of it may fail.
    await new Promise((r) => setTimeout(r, 1000));
    const [http, tcp] = await Promise.all([httpLoad.stop(), tcpLoad.stop()]);
    report(
      `killed backends h2 (HTTP/HTTPS) and t2 (TCP) under load after ${beforeKill.http} HTTP / ${beforeKill.tcp} TCP requests; ` +
        `health abnormal after ${detected[0]} ms (h2) and ${detected[1]} ms (t2)`,
    );
    // A request already on a connection to the backend when it dies cannot be saved (its process is gone);
    // every request sent after the kill must succeed.
    const inFlight = (s: LoadStats) => s.failedAt.filter((t) => t < deadAt).length;
    report(`backend kill — HTTP clients: ${loadSummary(http)}; failed ones in flight at the kill: ${inFlight(http)}`);
    report(`backend kill — TCP clients: ${loadSummary(tcp)}; failed ones in flight at the kill: ${inFlight(tcp)}`);
    expect(http.failed - inFlight(http), 'HTTP requests sent after the kill that failed').toBe(0);
    expect(tcp.failed - inFlight(tcp), 'TCP requests sent after the kill that failed').toBe(0);
    expect(inFlight(http) + inFlight(tcp)).toBeLessThanOrEqual(8); // at most the 4 + 4 requests in flight

    b.h2.hits = 0;
    b.t2.hits = 0;
    const revivedAt = Date.now();
    await Promise.all([b.h2.revive(), b.t2.revive()]);
    const back = await Promise.all([
      serverStatus(b.h2.port, [listeners.http, listeners.https], 'normal', 15_000).then(() => Date.now() - revivedAt),
      serverStatus(b.t2.port, [listeners.tcp], 'normal', 15_000).then(() => Date.now() - revivedAt),
    ]);
    // The nodes learn the transition through the control channel: give them a moment to apply it.
    const after = await eventually(
      'the revived backends receive traffic',
      async () => {
        const [h, t] = await Promise.all([burst(40, httpViaVip), burst(40, tcpViaVip)]);
        return (h.answers.h2 ?? 0) > 0 && (t.answers.t2 ?? 0) > 0 ? { h, t } : undefined;
      },
      5_000,
      100,
    );
    report(
      `brought h2 and t2 back: health normal after ${back[0]} ms (h2) and ${back[1]} ms (t2) (healthyThreshold 2, interval 1 s); ` +
        `then HTTP ${JSON.stringify(after.h.answers)}, TCP ${JSON.stringify(after.t.answers)}`,
    );
    expect(after.h.failed + after.t.failed).toBe(0);
  }, 60_000);

  it('an L4 node killed under load: clients that know only the VIP keep connecting, the other node serves the LB', async () => {
    // Which node dies: in active-standby the one carrying the VIP (killing the standby would show nothing);
    // in active-active either, as both take new connections.
    const before = await getLb();
    const carrying = l4View(before).filter((n) => n.role === 'active');
    const standby = carrying.length === 1;
    const victim = carrying[0]!.address;
    const survivor = L4.find((a) => a !== victim)!;
    const victimName = `l4-node-${L4.indexOf(victim) + 1}`;

    // Clients as one that was given only the VIP: no other address to fall back to. When each request
    // succeeded tells the longest time in which none did.
    const okAt: number[] = [];
    const timed = (ask: () => Promise<string>) => async () => {
      const answer = await ask();
      okAt.push(Date.now());
      return answer;
    };
    const httpLoad = loadLoop(timed(httpViaVip), { concurrency: 4, maxRequests: 20_000, maxMs: 30_000 });
    const tcpLoad = loadLoop(timed(tcpViaVip), { concurrency: 4, maxRequests: 20_000, maxMs: 30_000 });
    await warmedUp([httpLoad, tcpLoad]);
    const killStartedAt = Date.now();
    const pid = await cloud.kill(victimName);
    // From here the process is gone, and its sockets with it.
    const deadAt = Date.now();
    const after = await eventually(
      'the LB active with the other node serving it',
      async () => {
        const l = await getLb();
        const l4 = l4View(l);
        const dead = l4.find((n) => n.address === victim);
        const live = l4.find((n) => n.address === survivor);
        return l.status === 'active' && live?.online && live.role === 'active' && !dead?.online ? l : undefined;
      },
      10_000,
      100,
    );
    const movedMs = Date.now() - killStartedAt;
    // A fixed window on purpose: the load goes on after the move, and no request of it may fail.
    await new Promise((r) => setTimeout(r, 2000));
    const [http, tcp] = await Promise.all([httpLoad.stop(), tcpLoad.stop()]);
    const stoppedAt = Date.now();

    // The longest stretch from the kill on in which no request of either protocol succeeded.
    const marks = [killStartedAt, ...okAt.filter((t) => t > killStartedAt).sort((x, y) => x - y), stoppedAt];
    let gapMs = 0;
    for (let k = 1; k < marks.length; k++) gapMs = Math.max(gapMs, marks[k]! - marks[k - 1]!);
    const failedAt = [...http.failedAt, ...tcp.failedAt];
    const inFlight = failedAt.filter((t) => t < deadAt).length;
    const lastFailure = failedAt.length ? Math.max(...failedAt) - killStartedAt : undefined;
    report(
      `SIGKILLed ${victimName} (${victim}, pid ${pid}, ${standby ? 'the active node of active-standby' : 'one of two active-active nodes'}) ` +
        `under load on VIP ${vip}: LB active with ${survivor} serving ${movedMs} ms after the kill; ` +
        `L4 nodes ${JSON.stringify(l4View(after))}`,
    );
    report(`L4 kill — HTTP clients (VIP only): ${loadSummary(http)}`);
    report(`L4 kill — TCP clients (VIP only): ${loadSummary(tcp)}`);
    report(
      `L4 kill — failed new connections: ${failedAt.length} (${inFlight} sent before the process was gone, ` +
        `last one sent ${lastFailure ?? '-'} ms after the kill); longest time without a successful request: ${gapMs} ms`,
    );

    expect(after.address).toBe(vip);
    expect(after.addresses).toEqual([vip]);
    expect(await resolveA(cloud.dnsPort, dnsName)).toEqual([vip]);
    // `nodes` may still list the dead node for a while, offline; only the live one carries the VIP.
    expect(
      l4View(after)
        .filter((n) => n.online && n.role === 'active')
        .map((n) => n.address),
    ).toEqual([survivor]);
    if (standby) {
      // Active-standby: connections fail only while the standby takes the VIP over.
      expect(gapMs, 'longest time without a successful request').toBeLessThanOrEqual(3_000);
      expect(failedAt.filter((t) => t > killStartedAt + 3_000)).toEqual([]);
    } else {
      // Active-active: the survivor already holds the VIP; only requests in flight on the dead node fail.
      expect(failedAt.length - inFlight, 'requests sent after the node was gone that failed').toBe(0);
      expect(inFlight).toBeLessThanOrEqual(8); // at most the 4 + 4 requests in flight
      expect(gapMs).toBeLessThanOrEqual(1_000);
    }

    const fresh = await Promise.all([
      burst(50, tcpViaVip),
      burst(50, httpViaVip),
      burst(50, udpViaVip),
      burst(50, httpsViaVip),
    ]);
    report(`after the kill, new connections to ${vip}: ${fresh.map(loadSummary).join(' ; ')}`);
    for (const s of fresh) expect(s.failed).toBe(0);
  }, 60_000);

  it('the API killed: the nodes keep forwarding from their config', async () => {
    const httpLoad = loadLoop(httpViaVip, { concurrency: 4, maxRequests: 4000, maxMs: 20_000 });
    const tcpLoad = loadLoop(tcpViaVip, { concurrency: 4, maxRequests: 4000, maxMs: 20_000 });
    await warmedUp([httpLoad, tcpLoad]);
    const pid = await cloud.kill('api');
    const apiDown = await fetch(`${cloud.apiUrl}/healthz`).then(
      () => false,
      () => true,
    );
    expect(apiDown).toBe(true);
    // A fixed window on purpose: 3 s of load with the API down, in which no request may fail.
    await new Promise((r) => setTimeout(r, 3000));
    const [http, tcp] = await Promise.all([httpLoad.stop(), tcpLoad.stop()]);
    const udp = await burst(50, udpViaVip);
    report(`SIGKILLed the API (pid ${pid}) under load, kept sending to ${vip} for 3 s with the API down`);
    report(`API kill — HTTP clients: ${loadSummary(http)}`);
    report(`API kill — TCP clients: ${loadSummary(tcp)}`);
    report(`API kill — UDP flows afterwards: ${loadSummary(udp)}`);
    expect(http.failed + tcp.failed + udp.failed).toBe(0);
    expect(http.answers.h1 && http.answers.h2 && tcp.answers.t1 && tcp.answers.t2).toBeTruthy();
  }, 30_000);
});
