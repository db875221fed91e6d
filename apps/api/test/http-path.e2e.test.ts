import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, request, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSlbClient } from '@slb/client';
import {
  API_MAIN,
  cleanupRedis,
  eventually,
  freePort,
  freePortOn,
  isolatedHealthEnv,
  L4_MAIN,
  L7_MAIN,
  LOOPBACK_BACKENDS_ENV,
  type Proc,
  registerNode,
  startProcess,
} from '@slb/test-support/fleet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCertificate } from './helpers.js';

const ADMIN = 'http-admin-token-0123456789';
const healthEnv = isolatedHealthEnv();
const procs: Proc[] = [];
const backends: Server[] = [];
let dir: string;
let apiPort: number;

interface Seen {
  name: string;
  headers: IncomingHttpHeaders;
}

async function backend(name: string): Promise<number> {
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ name, headers: req.headers, url: req.url }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  backends.push(server);
  return (server.address() as { port: number }).port;
}

function get(
  url: string,
  headers: Record<string, string> = {},
  servername?: string,
): Promise<{ status: number; body: Seen & { url: string } }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const send = u.protocol === 'https:' ? httpsRequest : request;
    const req = send(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        headers,
        rejectUnauthorized: false,
        servername,
        agent: false,
      },
      (res) => {
        let data = '';
        res.on('data', (d) => {
          data += d;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: data.startsWith('{') ? JSON.parse(data) : data }),
        );
      },
    );
    req.setTimeout(2000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'slb-http-'));
  apiPort = await freePort();
  procs.push(
    startProcess(API_MAIN, {
      PORT: String(apiPort),
      ...LOOPBACK_BACKENDS_ENV,
      SLB_DB_PATH: join(dir, 'slb.db'),
      SLB_ADMIN_TOKEN: ADMIN,
      SLB_DNS_PORT: '0',
      SLB_ADDRESS_POOLS: '127.1.80.0/24', // VIPs of its own: e2e files run side by side
      ...healthEnv,
    }),
  );
  await eventually('the API', () =>
    fetch(`http://127.0.0.1:${apiPort}/healthz`).then((r) => (r.ok ? true : undefined)),
  );
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const common = {
    SLB_API_URL: apiUrl,
    SLB_METRICS_PORT: '0',
    SLB_SESSION_SYNC_REDIS_URL: 'off',
  };
  procs.push(
    startProcess(L4_MAIN, {
      ...common,
      SLB_NODE_ID: 'http-l4',
      SLB_NODE_JOIN_TOKEN: (await registerNode(apiUrl, ADMIN, { kind: 'l4', address: '127.0.0.41' })).joinToken,
      SLB_NODE_ADDRESS: '127.0.0.41',
      SLB_STATE_DIR: join(dir, 'l4'),
    }),
  );
  procs.push(
    startProcess(L7_MAIN, {
      ...common,
      SLB_NODE_ID: 'http-l7',
      SLB_NODE_JOIN_TOKEN: (await registerNode(apiUrl, ADMIN, { kind: 'l7', address: '127.0.0.51' })).joinToken,
      SLB_NODE_ADDRESS: '127.0.0.51',
      SLB_STATE_DIR: join(dir, 'l7'),
    }),
  );
}, 30_000);

afterAll(async () => {
  await Promise.all(procs.map((p) => p.stop('SIGKILL')));
  for (const b of backends) b.close();
  rmSync(dir, { recursive: true, force: true });
  await cleanupRedis(healthEnv);
});

describe('HTTP and HTTPS through L4 → L7 → backend, configured through the API', () => {
  it('routes by rule, adds forwarding headers with the real client address, and terminates TLS by SNI', async () => {
    const client = createSlbClient({ baseUrl: `http://127.0.0.1:${apiPort}`, token: ADMIN });
    const webPort = await backend('web');
    const apiBackendPort = await backend('api');
    const lb = await client.POST('/v1/load-balancers', { body: { name: 'shop' } });
    const lbId = lb.data!.id;
    // Its VIP, from the pool this API was given: where clients connect, not the L4 node's address.
    const vip = lb.data!.address!;
    expect(vip).toMatch(/^127\.1\.80\.\d+$/);
    expect(lb.data!.addresses).toEqual([vip]);
    const web = await client.POST('/v1/load-balancers/{lbId}/server-groups', {
      params: { path: { lbId } },
      body: { name: 'web', servers: [{ address: '127.0.0.1', port: webPort }] },
    });
    const api = await client.POST('/v1/load-balancers/{lbId}/server-groups', {
      params: { path: { lbId } },
      body: { name: 'api', servers: [{ address: '127.0.0.1', port: apiBackendPort }] },
    });
    const httpPort = await freePortOn([vip]);
    const http = await client.POST('/v1/load-balancers/{lbId}/listeners', {
      params: { path: { lbId } },
      body: { protocol: 'http', port: httpPort, serverGroupId: web.data!.id },
    });
    await client.POST('/v1/load-balancers/{lbId}/listeners/{lsnId}/rules', {
      params: { path: { lbId, lsnId: http.data!.id } },
      body: { path: '/api', serverGroupId: api.data!.id },
    });
    const cert = await client.POST('/v1/certificates', { body: { name: 'shop', ...makeCertificate('shop.example') } });
    const httpsPort = await freePortOn([vip]);
    await client.POST('/v1/load-balancers/{lbId}/listeners', {
      params: { path: { lbId } },
      body: { protocol: 'https', port: httpsPort, serverGroupId: web.data!.id, certificateId: cert.data!.id },
    });

    const home = await eventually(
      'http through the fleet',
      () => get(`http://${vip}:${httpPort}/`).catch(() => undefined),
      10_000,
    );
    expect(home.status).toBe(200);
    expect(home.body.name).toBe('web');
    expect(home.body.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(home.body.headers['x-real-ip']).toBe('127.0.0.1');
    expect(home.body.headers['x-forwarded-proto']).toBe('http');
    expect(home.body.headers['x-forwarded-port']).toBe(String(httpPort));
    const routed = await get(`http://${vip}:${httpPort}/api/orders`, { 'x-forwarded-for': '203.0.113.9' });
    expect(routed.body.name).toBe('api');
    // Replaced, not appended (xForwardedForMode defaults to replace): a client cannot forge its own list. And
    // the L7 node took the PROXY header, so the L4 node dialled it from its own address (127.0.0.41), not the VIP.
    expect(routed.body.headers['x-forwarded-for']).toBe('127.0.0.1');

    const secure = await eventually(
      'https through the fleet',
      () => get(`https://${vip}:${httpsPort}/`, {}, 'shop.example').catch(() => undefined),
      10_000,
    );
    expect(secure.status).toBe(200);
    expect(secure.body.headers['x-forwarded-proto']).toBe('https');

    const nodes = await client.GET('/v1/nodes');
    expect(nodes.data!.items.map((n) => `${n.address}:${n.kind}`).sort()).toEqual(['127.0.0.41:l4', '127.0.0.51:l7']);

    // The L7 node saved what it serves, key included, but sealed: its state dir holds no key in clear.
    const saved = join(dir, 'l7', 'last-known-good.json');
    await eventually('the L7 node saved its snapshot', async () =>
      existsSync(saved) && readFileSync(saved, 'utf8').includes('sealed:v1:') ? true : undefined,
    );
    for (const file of readdirSync(join(dir, 'l7'))) {
      expect(readFileSync(join(dir, 'l7', file), 'utf8'), file).not.toContain('PRIVATE KEY');
    }
  });
});
