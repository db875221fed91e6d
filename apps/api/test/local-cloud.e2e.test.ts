// The end-to-end suite against the real local cloud (`scripts/local-cloud.mjs`: API, two health workers, two
// L4 and two L7 nodes as processes), driven through the generated client. It kills a backend, an L4 node and
// the API under load and prints what the clients saw; the Redis restart lives in local-cloud-redis.e2e.test.ts.
import { createSlbClient, type SlbClient } from '@slb/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  resolveA,
  startLocalCloud,
  tcpAsk,
  tcpBackend,
  udpAsk,
  udpBackend,
} from './fleet.js';
import { makeCertificate } from './helpers.js';

const L4 = ['127.0.0.71', '127.0.0.72'];
const L7 = ['127.0.0.81', '127.0.0.82'];
const FAST_CHECK = { interval: 1, timeout: 1, healthyThreshold: 2, unhealthyThreshold: 2 } as const;
/** A weight-3 backend's share of the traffic against a weight-1 one: 0.75, within this much. */
const TOLERANCE = 0.1;

let cloud: LocalCloud;
let client: SlbClient;
let lbId: string;
let dnsName: string;
const ports = { tcp: 0, udp: 0, http: 0, https: 0 };
const listeners = { tcp: '', udp: '', http: '', https: '' };
const b: Record<'t1' | 't2' | 'u1' | 'u2' | 'h1' | 'h2', Backend> = {} as never;

const report = (line: string) => console.log(`[local-cloud e2e] ${line}`);
const summary = (s: LoadStats) =>
  `${s.sent} sent, ${s.failed} failed in ${(s.ms / 1000).toFixed(1)} s, answers ${JSON.stringify(s.answers)}${
    s.errors.length ? `, first errors: ${s.errors.join(' | ')}` : ''
  }`;
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

const tcpVia = (address: string) => () => tcpAsk(address, ports.tcp);
const httpVia = (address: string) => () => httpAsk(`http://${address}:${ports.http}/`).then((r) => r.body.name);
const alternate =
  (via: (address: string) => () => Promise<string>, addresses = L4) =>
  (i: number) =>
    via(addresses[i % addresses.length]!)();

beforeAll(async () => {
  b.t1 = await tcpBackend('t1');
  b.t2 = await tcpBackend('t2');
  b.u1 = await udpBackend('u1');
  b.u2 = await udpBackend('u2');
  b.h1 = await httpBackend('h1');
  b.h2 = await httpBackend('h2');
  const started = Date.now();
  // --no-restart: a process the test kills stays down, so what the rest of the cloud does is deterministic.
  cloud = await startLocalCloud({ l4: L4, l7: L7, args: ['--no-restart'] });
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
    for (const key of ['tcp', 'udp', 'http', 'https'] as const) ports[key] = await freePortOn(L4);
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
    const active = await eventually(
      'LB active on both L4 nodes',
      async () => {
        const l = await getLb();
        return l.status === 'active' && l.addresses.length === 2 ? l : undefined;
      },
      15_000,
      100,
    );
    dnsName = active.dnsName;
    expect([...active.addresses].sort()).toEqual(L4);
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

    // DNS: the LB's name answers with both L4 addresses.
    expect(await resolveA(cloud.dnsPort, dnsName)).toEqual(L4);

    // Weighted proportions, 1:3, on fresh connections spread over both L4 nodes.
    const tcp = await burst(200, alternate(tcpVia));
    const udp = await burst(200, (i) => udpAsk(L4[i % 2]!, ports.udp));
    const http = await burst(400, alternate(httpVia));
    const https = await burst(100, (i) =>
      httpAsk(`https://${L4[i % 2]}:${ports.https}/`, { servername: 'shop.example' }).then((r) => {
        expect(r.body.headers['x-forwarded-proto']).toBe('https');
        return r.body.name;
      }),
    );
    report(`weights 1:3 — TCP: ${summary(tcp)}`);
    report(`weights 1:3 — UDP: ${summary(udp)}`);
    report(`weights 1:3 — HTTP: ${summary(http)}`);
    report(`weights 1:3 — HTTPS: ${summary(https)}`);
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
    // L7) node its connection lands on, on HTTP and HTTPS.
    for (const scheme of ['http', 'https'] as const) {
      const base = (address: string) => `${scheme}://${address}:${ports[scheme]}/`;
      const cookies = new Map<string, string>();
      for (let i = 0; i < 40 && cookies.size < 2; i++) {
        const r = await httpAsk(base(L4[i % 2]!), { servername: 'shop.example' });
        const set = (r.headers['set-cookie'] ?? []).find((c) => c.startsWith('SLBSTICKY='));
        expect(set, 'a first request gets the insert cookie').toBeDefined();
        cookies.set(r.body.name, set!.split(';')[0]!);
      }
      expect([...cookies.keys()].sort()).toEqual(['h1', 'h2']);
      for (const [name, cookie] of cookies) {
        const held = await burst(
          30,
          (i) =>
            httpAsk(base(L4[i % 2]!), { headers: { cookie }, servername: 'shop.example' }).then((r) => r.body.name),
          4,
        );
        report(`sticky ${scheme} cookie for ${name}: ${summary(held)}`);
        expect(held.answers).toEqual({ [name]: 30 });
      }
    }
  }, 60_000);

  it('removes a backend killed under load with no failed request, and takes it back after the healthy threshold', async () => {
    const httpLoad = loadLoop(alternate(httpVia), { concurrency: 4, maxRequests: 6000, maxMs: 30_000 });
    const tcpLoad = loadLoop(alternate(tcpVia), { concurrency: 4, maxRequests: 6000, maxMs: 30_000 });
    await new Promise((r) => setTimeout(r, 1000));
    const killedAt = Date.now();
    await Promise.all([b.h2.kill(), b.t2.kill()]);
    // Until kill() resolves a request may still reach the dying backend; from then on none can.
    const deadAt = Date.now();
    const beforeKill = { http: httpLoad.stats.sent, tcp: tcpLoad.stats.sent };
    const detected = await Promise.all([
      serverStatus(b.h2.port, [listeners.http, listeners.https], 'abnormal', 15_000).then(() => Date.now() - killedAt),
      serverStatus(b.t2.port, [listeners.tcp], 'abnormal', 15_000).then(() => Date.now() - killedAt),
    ]);
    await new Promise((r) => setTimeout(r, 1000));
    const [http, tcp] = await Promise.all([httpLoad.stop(), tcpLoad.stop()]);
    report(
      `killed backends h2 (HTTP/HTTPS) and t2 (TCP) under load after ${beforeKill.http} HTTP / ${beforeKill.tcp} TCP requests; ` +
        `health abnormal after ${detected[0]} ms (h2) and ${detected[1]} ms (t2)`,
    );
    // A request already on a connection to the backend when it dies cannot be saved (its process is gone);
    // every request sent after the kill must succeed.
    const inFlight = (s: LoadStats) => s.failedAt.filter((t) => t < deadAt).length;
    report(`backend kill — HTTP clients: ${summary(http)}; failed ones in flight at the kill: ${inFlight(http)}`);
    report(`backend kill — TCP clients: ${summary(tcp)}; failed ones in flight at the kill: ${inFlight(tcp)}`);
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
        const [h, t] = await Promise.all([burst(40, alternate(httpVia)), burst(40, alternate(tcpVia))]);
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

  it('an L4 node killed under load: its LB moves to the other node, new connections succeed through it', async () => {
    // A client as a real one would be: it resolves the LB's name (cached for 500 ms) and, when a connection
    // fails, tries the next address it was given.
    let cache: { at: number; addresses: string[] } = { at: 0, addresses: L4 };
    let firstAttemptFailures = 0;
    const addresses = async () => {
      if (Date.now() - cache.at > 500) {
        const a = await resolveA(cloud.dnsPort, dnsName).catch(() => cache.addresses);
        cache = { at: Date.now(), addresses: a.length > 0 ? a : cache.addresses };
      }
      return cache.addresses;
    };
    const withFallback = (via: (address: string) => () => Promise<string>) => async (i: number) => {
      const list = await addresses();
      let last: unknown;
      for (let k = 0; k < list.length; k++) {
        try {
          return await via(list[(i + k) % list.length]!)();
        } catch (err) {
          if (k === 0) firstAttemptFailures++;
          last = err;
        }
      }
      throw last;
    };
    const httpLoad = loadLoop(withFallback(httpVia), { concurrency: 4, maxRequests: 6000, maxMs: 30_000 });
    const tcpLoad = loadLoop(withFallback(tcpVia), { concurrency: 4, maxRequests: 6000, maxMs: 30_000 });
    await new Promise((r) => setTimeout(r, 1000));
    const pid = await cloud.kill('l4-node-1');
    const killedAt = Date.now();
    const moved = await eventually(
      'the LB leaves the killed node',
      async () => {
        const l = await getLb();
        return l.addresses.length === 1 ? l : undefined;
      },
      10_000,
      100,
    );
    const movedMs = Date.now() - killedAt;
    await eventually(
      'DNS answers the other node only',
      async () => ((await resolveA(cloud.dnsPort, dnsName)).join() === L4[1] ? true : undefined),
      5_000,
      100,
    );
    const dnsMs = Date.now() - killedAt;
    await new Promise((r) => setTimeout(r, 1000));
    const [http, tcp] = await Promise.all([httpLoad.stop(), tcpLoad.stop()]);
    report(
      `SIGKILLed l4-node-1 (${L4[0]}, pid ${pid}) under load: LB addresses ${JSON.stringify(moved.addresses)} after ${movedMs} ms, ` +
        `DNS answers only ${L4[1]} after ${dnsMs} ms`,
    );
    report(`L4 kill — HTTP clients (DNS + fallback): ${summary(http)}`);
    report(`L4 kill — TCP clients (DNS + fallback): ${summary(tcp)}`);
    report(
      `L4 kill — connections that failed on their first address and succeeded on the next: ${firstAttemptFailures}`,
    );
    expect(moved.addresses).toEqual([L4[1]]);
    report(`L4 kill — LB after the move: status ${moved.status}, nodes ${JSON.stringify(moved.nodes)}`);
    // `nodes` keeps showing the dead node, marked offline; only the live one hosts the LB.
    expect(moved.nodes.filter((n) => n.online && n.kind === 'l4').map((n) => n.address)).toEqual([L4[1]]);
    expect(http.failed + tcp.failed).toBe(0);

    const fresh = await Promise.all([
      burst(50, tcpVia(L4[1]!)),
      burst(50, httpVia(L4[1]!)),
      burst(50, () => udpAsk(L4[1]!, ports.udp)),
      burst(50, () =>
        httpAsk(`https://${L4[1]}:${ports.https}/`, { servername: 'shop.example' }).then((r) => r.body.name),
      ),
    ]);
    report(`after the move, new connections through ${L4[1]}: ${fresh.map(summary).join(' ; ')}`);
    for (const s of fresh) expect(s.failed).toBe(0);
  }, 60_000);

  it('the API killed: the nodes keep forwarding from their config', async () => {
    const httpLoad = loadLoop(httpVia(L4[1]!), { concurrency: 4, maxRequests: 4000, maxMs: 20_000 });
    const tcpLoad = loadLoop(tcpVia(L4[1]!), { concurrency: 4, maxRequests: 4000, maxMs: 20_000 });
    await new Promise((r) => setTimeout(r, 500));
    const pid = await cloud.kill('api');
    const apiDown = await fetch(`${cloud.apiUrl}/healthz`).then(
      () => false,
      () => true,
    );
    expect(apiDown).toBe(true);
    await new Promise((r) => setTimeout(r, 3000));
    const [http, tcp] = await Promise.all([httpLoad.stop(), tcpLoad.stop()]);
    const udp = await burst(50, () => udpAsk(L4[1]!, ports.udp));
    report(`SIGKILLed the API (pid ${pid}) under load, kept sending for 3 s with the API down`);
    report(`API kill — HTTP clients: ${summary(http)}`);
    report(`API kill — TCP clients: ${summary(tcp)}`);
    report(`API kill — UDP flows afterwards: ${summary(udp)}`);
    expect(http.failed + tcp.failed + udp.failed).toBe(0);
    expect(http.answers.h1 && http.answers.h2 && tcp.answers.t1 && tcp.answers.t2).toBeTruthy();
  }, 30_000);
});
