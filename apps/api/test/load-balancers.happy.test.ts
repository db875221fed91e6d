import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  appWithTenant,
  call,
  makeCertificate,
  newLoadBalancer,
  newTenant,
  type TestApp,
} from './helpers.js';

let t: TestApp;
let token: string;
beforeAll(async () => {
  ({ t, token } = await appWithTenant());
});
afterAll(() => t.close());

describe('load balancer lifecycle', () => {
  it('creates, reads, updates, lists and deletes a load balancer', async () => {
    const created = await call(t.app, token, 'POST', '/v1/load-balancers', { name: 'web', tags: { env: 'prod' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'web',
      addressType: 'intranet',
      placement: { mode: 'all', nodeCount: null },
      status: 'provisioning',
      configVersion: 1,
      address: '127.1.0.1', // the lowest address of the default pool, 127.1.0.0/16
      addresses: ['127.1.0.1'],
      tags: { env: 'prod' },
    });
    expect(created.body.addressPoolId).toMatch(/^pool-[0-9a-z]{20}$/);
    expect(created.body.id).toMatch(/^lb-[0-9a-z]{20}$/);
    expect(created.body.dnsName).toBe(`${created.body.id}.slb.internal`);
    expect(created.headers.etag).toBe('"r1"');

    const read = await call(t.app, token, 'GET', `/v1/load-balancers/${created.body.id}`);
    expect(read.body).toEqual(created.body);

    const patched = await call(t.app, token, 'PATCH', `/v1/load-balancers/${created.body.id}`, { name: 'web2' });
    expect(patched.status).toBe(200);
    expect(patched.body.name).toBe('web2');
    expect(patched.body.configVersion).toBe(2);
    expect(patched.headers.etag).toBe('"r2"');

    const list = await call(t.app, token, 'GET', '/v1/load-balancers');
    expect(list.body.items.map((i: { id: string }) => i.id)).toContain(created.body.id);

    expect((await call(t.app, token, 'DELETE', `/v1/load-balancers/${created.body.id}`)).status).toBe(204);
    expect((await call(t.app, token, 'GET', `/v1/load-balancers/${created.body.id}`)).status).toBe(404);
  });

  it('paginates with a cursor in creation order', async () => {
    const { token: own } = await newTenant(t.app, 'pager');
    const ids: string[] = [];
    for (let i = 0; i < 7; i++)
      ids.push((await call(t.app, own, 'POST', '/v1/load-balancers', { name: `lb${i}` })).body.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { body: { items: { id: string }[]; nextCursor: string | null } } = await call(
        t.app,
        own,
        'GET',
        `/v1/load-balancers?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      );
      seen.push(...page.body.items.map((i) => i.id));
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);
  });

  it('deletion protection refuses delete until turned off', async () => {
    const lb = await call(t.app, token, 'POST', '/v1/load-balancers', { name: 'keep', deletionProtection: true });
    const refused = await call(t.app, token, 'DELETE', `/v1/load-balancers/${lb.body.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('deletion_protected');
    expect((await call(t.app, token, 'GET', `/v1/load-balancers/${lb.body.id}`)).status).toBe(200);
    await call(t.app, token, 'PATCH', `/v1/load-balancers/${lb.body.id}`, { deletionProtection: false });
    expect((await call(t.app, token, 'DELETE', `/v1/load-balancers/${lb.body.id}`)).status).toBe(204);
  });

  it('builds a full LB: groups, servers, tcp/udp/http/https listeners, rules, health', async () => {
    const { lbId, sgId, servers } = await newLoadBalancer(t.app, token);
    const base = `/v1/load-balancers/${lbId}`;
    const tcp = await call(t.app, token, 'POST', `${base}/listeners`, {
      protocol: 'tcp',
      port: 80,
      serverGroupId: sgId,
    });
    expect(tcp.status).toBe(201);
    expect(tcp.body).toMatchObject({
      protocol: 'tcp',
      scheduler: 'wrr',
      status: 'running',
      idleTimeout: 900,
      requestTimeout: null,
      xForwardedFor: false,
      healthCheck: { type: 'tcp', interval: 2, timeout: 5, healthyThreshold: 3, unhealthyThreshold: 3 },
    });
    const udp = await call(t.app, token, 'POST', `${base}/listeners`, {
      protocol: 'udp',
      port: 80,
      serverGroupId: sgId,
      scheduler: 'sch',
      persistenceTimeout: 60,
      healthCheck: { udpRequest: 'ping', udpExpect: 'pong' },
    });
    expect(udp.status).toBe(201);
    expect(udp.body.healthCheck).toMatchObject({ type: 'udp', udpRequest: 'ping', udpExpect: 'pong' });
    const http = await call(t.app, token, 'POST', `${base}/listeners`, {
      protocol: 'http',
      port: 8080,
      serverGroupId: sgId,
      stickySession: { mode: 'insert', cookieTimeout: 600 },
      healthCheck: { path: '/healthz', domain: 'example.com', httpCodes: ['http_2xx'] },
    });
    expect(http.status).toBe(201);
    expect(http.body.stickySession).toEqual({ mode: 'insert', cookieName: 'SLBSERVERID', cookieTimeout: 600 });
    expect(http.body.xForwardedFor).toBe(true);
    expect(http.body.xForwardedForMode).toBe('replace');
    const appended = await call(t.app, token, 'PATCH', `${base}/listeners/${http.body.id}`, {
      xForwardedForMode: 'append',
    });
    expect(appended.status).toBe(200);
    expect(appended.body.xForwardedForMode).toBe('append');

    const cert = await call(t.app, token, 'POST', '/v1/certificates', { name: 'c', ...makeCertificate('example.com') });
    const https = await call(t.app, token, 'POST', `${base}/listeners`, {
      protocol: 'https',
      port: 443,
      serverGroupId: sgId,
      certificateId: cert.body.id,
    });
    expect(https.status).toBe(201);

    const other = await call(t.app, token, 'POST', `${base}/server-groups`, {
      name: 'api',
      servers: [{ address: '::1', port: 9100 }],
    });
    const rule = await call(t.app, token, 'POST', `${base}/listeners/${http.body.id}/rules`, {
      domain: '*.Example.com',
      path: '/api',
      serverGroupId: other.body.id,
    });
    expect(rule.status).toBe(201);
    expect(rule.body).toMatchObject({ domain: '*.example.com', path: '/api', priority: 100 });

    const stopped = await call(t.app, token, 'POST', `${base}/listeners/${tcp.body.id}/stop`);
    expect(stopped.body.status).toBe('stopped');
    expect((await call(t.app, token, 'POST', `${base}/listeners/${tcp.body.id}/start`)).body.status).toBe('running');

    const health = await call(t.app, token, 'GET', `${base}/health`);
    expect(health.status).toBe(200);
    // 4 listeners × 2 servers of the default group + 1 server of the rule's group on the http listener.
    expect(health.body.items).toHaveLength(9);
    expect(new Set(health.body.items.map((i: { status: string }) => i.status))).toEqual(new Set(['unavailable']));
    expect(health.body.items.map((i: { serverId: string }) => i.serverId)).toContain(servers[0]!.id);

    const weight = await call(t.app, token, 'PATCH', `${base}/server-groups/${sgId}/servers/${servers[1]!.id}`, {
      weight: 0,
    });
    expect(weight.body.weight).toBe(0);
    const added = await call(t.app, token, 'POST', `${base}/server-groups/${sgId}/servers`, {
      servers: [
        { address: '127.0.0.3', port: 9003 },
        { address: '127.0.0.4', port: 9004, weight: 10 },
      ],
    });
    expect(added.status).toBe(201);
    expect(added.body.items).toHaveLength(2);
    const lb = await call(t.app, token, 'GET', base);
    expect(lb.body.configVersion).toBeGreaterThan(8);
    // Deleting the LB takes everything under it.
    expect((await call(t.app, token, 'DELETE', base)).status).toBe(204);
    expect((await call(t.app, token, 'GET', `${base}/listeners/${tcp.body.id}`)).status).toBe(404);
    expect((await call(t.app, token, 'DELETE', `/v1/certificates/${cert.body.id}`)).status).toBe(204);
  });

  it('serves liveness, readiness, metrics and the OpenAPI document without a token', async () => {
    expect((await call(t.app, null, 'GET', '/healthz')).status).toBe(200);
    expect((await call(t.app, null, 'GET', '/readyz')).body.checks.database).toBe('ok');
    const metrics = await t.app.inject({ url: '/metrics' });
    expect(metrics.body).toContain('slb_api_http_requests_total');
    expect((await call(t.app, null, 'GET', '/openapi.json')).body.openapi).toBe('3.1.0');
  });

  it('lists nodes (empty until nodes register) for an admin', async () => {
    const nodes = await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes');
    expect(nodes.body).toEqual({ items: [], nextCursor: null });
    expect((await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes/node-unknown')).status).toBe(404);
  });
});
