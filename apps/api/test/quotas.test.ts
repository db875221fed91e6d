import { DEFAULT_QUOTAS, QUOTA_NAMES, QUOTAS } from '@slb/model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import {
  ADMIN_TOKEN,
  type Call,
  call,
  dumpDatabase,
  makeApp,
  makeCertificate,
  newLoadBalancer,
  newTenant,
  type TestApp,
} from './helpers.js';

// Per-tenant quotas: a member at a limit gets 409 quota_exceeded naming the quota, and nothing is created;
// an admin override moves the limit; GET shows limit and usage; creates racing for the last slot get it once.

let t: TestApp;
beforeAll(async () => {
  t = await makeApp();
});
afterAll(() => t.close());

const setQuotas = (tenantId: string, body: Record<string, number | null>) =>
  call(t.app, ADMIN_TOKEN, 'PATCH', `/v1/tenants/${tenantId}/quotas`, body);

function expectQuotaExceeded(res: Call, name: string, limit: number, usage: number) {
  expect(res.status).toBe(409);
  expect(res.headers['content-type']).toContain('application/problem+json');
  expect(res.body.code).toBe('quota_exceeded');
  expect(res.body.quota).toMatchObject({ name, limit, usage });
  expect(res.body.detail).toContain(name);
}

/** Runs a create that must be refused by `name`, and checks the database did not move. */
async function refusedWithoutChange(make: () => Promise<Call>, name: string, limit: number, usage: number) {
  const before = await dumpDatabase(t.app);
  expectQuotaExceeded(await make(), name, limit, usage);
  expect(await dumpDatabase(t.app)).toBe(before);
}

const usageOf = async (token: string) => {
  const res = await call(t.app, token, 'GET', '/v1/quotas');
  expect(res.status).toBe(200);
  return Object.fromEntries(res.body.items.map((i: { name: string; usage: number }) => [i.name, i.usage]));
};

describe('each quota', () => {
  it('load balancers: the default holds, an override raises it', async () => {
    const { tenantId, token } = await newTenant(t.app, 'lbs');
    for (let i = 0; i < DEFAULT_QUOTAS.loadBalancers; i++) {
      expect((await call(t.app, token, 'POST', '/v1/load-balancers', { name: `lb${i}` })).status).toBe(201);
    }
    const limit = DEFAULT_QUOTAS.loadBalancers;
    await refusedWithoutChange(
      () => call(t.app, token, 'POST', '/v1/load-balancers', { name: 'over' }),
      'loadBalancers',
      limit,
      limit,
    );
    expect((await setQuotas(tenantId, { loadBalancers: limit + 1 })).status).toBe(200);
    expect((await call(t.app, token, 'POST', '/v1/load-balancers', { name: 'one-more' })).status).toBe(201);
    expectQuotaExceeded(
      await call(t.app, token, 'POST', '/v1/load-balancers', { name: 'over' }),
      'loadBalancers',
      limit + 1,
      limit + 1,
    );
    expect((await usageOf(token)).loadBalancers).toBe(limit + 1);
  });

  it('listeners per LB, server groups per LB, servers per group and per tenant, rules per listener', async () => {
    const { tenantId, token } = await newTenant(t.app, 'per-lb');
    const { lbId, sgId } = await newLoadBalancer(t.app, token); // one group of two servers
    expect(
      (
        await setQuotas(tenantId, {
          listenersPerLoadBalancer: 1,
          serverGroupsPerLoadBalancer: 2,
          serversPerServerGroup: 3,
          servers: 4,
          rulesPerListener: 1,
        })
      ).status,
    ).toBe(200);
    const lb = `/v1/load-balancers/${lbId}`;
    const http = await call(t.app, token, 'POST', `${lb}/listeners`, {
      protocol: 'http',
      port: 80,
      serverGroupId: sgId,
    });
    expect(http.status).toBe(201);
    await refusedWithoutChange(
      () => call(t.app, token, 'POST', `${lb}/listeners`, { protocol: 'tcp', port: 81, serverGroupId: sgId }),
      'listenersPerLoadBalancer',
      1,
      1,
    );

    const rules = `${lb}/listeners/${http.body.id}/rules`;
    expect((await call(t.app, token, 'POST', rules, { path: '/a', serverGroupId: sgId })).status).toBe(201);
    await refusedWithoutChange(
      () => call(t.app, token, 'POST', rules, { path: '/b', serverGroupId: sgId }),
      'rulesPerListener',
      1,
      1,
    );

    // A batch counts every server: 2 in the group + 2 is past 3, though 1 more is not.
    const add = (ports: number[]) =>
      call(t.app, token, 'POST', `${lb}/server-groups/${sgId}/servers`, {
        servers: ports.map((port) => ({ address: '127.0.0.1', port })),
      });
    await refusedWithoutChange(() => add([7001, 7002]), 'serversPerServerGroup', 3, 2);
    expect((await add([7001])).status).toBe(201);

    // A second group with its servers: the tenant-wide servers quota (4) counts the 3 already there.
    const group = (name: string, ports: number[]) =>
      call(t.app, token, 'POST', `${lb}/server-groups`, {
        name,
        servers: ports.map((port) => ({ address: '127.0.0.1', port })),
      });
    await refusedWithoutChange(() => group('g2', [8001, 8002]), 'servers', 4, 3);
    expect((await group('g2', [8001])).status).toBe(201);
    await refusedWithoutChange(() => group('g3', []), 'serverGroupsPerLoadBalancer', 2, 2);

    expect(await usageOf(token)).toMatchObject({
      loadBalancers: 1,
      listeners: 1,
      listenersPerLoadBalancer: 1,
      serverGroupsPerLoadBalancer: 2,
      serversPerServerGroup: 3,
      servers: 4,
      rulesPerListener: 1,
    });

    // Raised by the admin, each create goes through.
    await setQuotas(tenantId, { listenersPerLoadBalancer: 2, rulesPerListener: 2, servers: 5 });
    expect(
      (await call(t.app, token, 'POST', `${lb}/listeners`, { protocol: 'tcp', port: 81, serverGroupId: sgId })).status,
    ).toBe(201);
    expect((await call(t.app, token, 'POST', rules, { path: '/b', serverGroupId: sgId })).status).toBe(201);
    expect((await group('g2b', [])).status).toBe(409); // still two groups at most
  });

  it('backends: servers times the listeners and rules using them, however the product grows', async () => {
    const { tenantId, token } = await newTenant(t.app, 'backends');
    await setQuotas(tenantId, { backends: 6 });
    const { lbId, sgId } = await newLoadBalancer(t.app, token); // a group of two servers
    const lb = `/v1/load-balancers/${lbId}`;
    const listen = (protocol: string, port: number, serverGroupId = sgId) =>
      call(t.app, token, 'POST', `${lb}/listeners`, { protocol, port, serverGroupId });
    const http = await listen('http', 6001); // 2
    expect(http.status).toBe(201);
    expect((await listen('tcp', 6002)).status).toBe(201); // 4
    // One more server in the group is one more on each of its two listeners: 6, at the limit.
    const add = (port: number) =>
      call(t.app, token, 'POST', `${lb}/server-groups/${sgId}/servers`, { servers: [{ address: '127.0.0.9', port }] });
    expect((await add(6101)).status).toBe(201);
    await refusedWithoutChange(() => add(6102), 'backends', 6, 6);
    await refusedWithoutChange(() => listen('udp', 6003), 'backends', 6, 6);
    // A rule naming another group adds that group's servers to the listener (a rule on its own group adds none).
    const other = await call(t.app, token, 'POST', `${lb}/server-groups`, {
      name: 'other',
      servers: [{ address: '127.0.0.10', port: 6201 }],
    });
    const rules = `${lb}/listeners/${http.body.id}/rules`;
    expect((await call(t.app, token, 'POST', rules, { path: '/same', serverGroupId: sgId })).status).toBe(201);
    await refusedWithoutChange(
      () => call(t.app, token, 'POST', rules, { path: '/other', serverGroupId: other.body.id }),
      'backends',
      6,
      6,
    );
    expect((await usageOf(token)).backends).toBe(6);
    await setQuotas(tenantId, { backends: 7 });
    expect((await call(t.app, token, 'POST', rules, { path: '/other', serverGroupId: other.body.id })).status).toBe(
      201,
    );
    expect((await usageOf(token)).backends).toBe(7);
  });

  it('listeners across all load balancers of a tenant', async () => {
    const { tenantId, token } = await newTenant(t.app, 'fleet-share');
    await setQuotas(tenantId, { listeners: 2 });
    const [a, b] = [await newLoadBalancer(t.app, token), await newLoadBalancer(t.app, token)];
    const add = (lb: { lbId: string; sgId: string }, port: number) =>
      call(t.app, token, 'POST', `/v1/load-balancers/${lb.lbId}/listeners`, {
        protocol: 'udp',
        port,
        serverGroupId: lb.sgId,
      });
    expect((await add(a, 5301)).status).toBe(201);
    expect((await add(b, 5302)).status).toBe(201);
    await refusedWithoutChange(() => add(a, 5303), 'listeners', 2, 2);
    expect(await usageOf(token)).toMatchObject({ listeners: 2, listenersPerLoadBalancer: 1 });
  });

  it('certificates, ACLs and entries per ACL (on create and on update)', async () => {
    const { tenantId, token } = await newTenant(t.app, 'tenant-wide');
    await setQuotas(tenantId, { certificates: 1, acls: 1, entriesPerAcl: 2 });
    const pem = makeCertificate('quota.example');
    expect((await call(t.app, token, 'POST', '/v1/certificates', { name: 'a', ...pem })).status).toBe(201);
    await refusedWithoutChange(
      () => call(t.app, token, 'POST', '/v1/certificates', { name: 'b', ...pem }),
      'certificates',
      1,
      1,
    );

    const entries = (n: number) => Array.from({ length: n }, (_, i) => ({ cidr: `10.0.${i}.0/24` }));
    await refusedWithoutChange(
      () => call(t.app, token, 'POST', '/v1/acls', { name: 'big', entries: entries(3) }),
      'entriesPerAcl',
      2,
      0,
    );
    const acl = await call(t.app, token, 'POST', '/v1/acls', { name: 'ok', entries: entries(2) });
    expect(acl.status).toBe(201);
    await refusedWithoutChange(
      () => call(t.app, token, 'PATCH', `/v1/acls/${acl.body.id}`, { entries: entries(3) }),
      'entriesPerAcl',
      2,
      2,
    );
    await refusedWithoutChange(() => call(t.app, token, 'POST', '/v1/acls', { name: 'second' }), 'acls', 1, 1);

    // Lowered below usage: growth stops, shrinking still works.
    await setQuotas(tenantId, { entriesPerAcl: 1 });
    expect((await call(t.app, token, 'PATCH', `/v1/acls/${acl.body.id}`, { entries: entries(1) })).status).toBe(200);
    expect(await usageOf(token)).toMatchObject({ certificates: 1, acls: 1, entriesPerAcl: 1 });
  });
});

describe('the quota routes', () => {
  it('GET shows every quota with its limit, default, ceiling and usage; null drops an override', async () => {
    const { tenantId, token } = await newTenant(t.app, 'reader');
    const own = await call(t.app, token, 'GET', `/v1/tenants/${tenantId}/quotas`);
    expect(own.status).toBe(200);
    expect(own.body.tenantId).toBe(tenantId);
    expect(own.body.items.map((i: { name: string }) => i.name)).toEqual(QUOTA_NAMES);
    for (const item of own.body.items) {
      expect(item).toMatchObject({
        limit: DEFAULT_QUOTAS[item.name as keyof typeof DEFAULT_QUOTAS],
        overridden: false,
        usage: 0,
        ceiling: QUOTAS[item.name as keyof typeof QUOTAS].ceiling,
      });
    }
    const patched = await setQuotas(tenantId, { acls: 7 });
    expect(patched.body.items.find((i: { name: string }) => i.name === 'acls')).toMatchObject({
      limit: 7,
      default: DEFAULT_QUOTAS.acls,
      overridden: true,
    });
    const reset = await setQuotas(tenantId, { acls: null });
    expect(reset.body.items.find((i: { name: string }) => i.name === 'acls')).toMatchObject({
      limit: DEFAULT_QUOTAS.acls,
      overridden: false,
    });
  });

  it('a member cannot read another tenant (404) nor change quotas (403); bad overrides are 400 and change nothing', async () => {
    const a = await newTenant(t.app, 'a');
    const b = await newTenant(t.app, 'b');
    expect((await call(t.app, a.token, 'GET', `/v1/tenants/${b.tenantId}/quotas`)).status).toBe(404);
    const before = await dumpDatabase(t.app);
    const self = await call(t.app, a.token, 'PATCH', `/v1/tenants/${a.tenantId}/quotas`, { loadBalancers: 10_000 });
    expect(self.status).toBe(403);
    const cases: unknown[] = [
      { loadBalancers: -1 },
      { loadBalancers: 1.5 },
      { listenersPerLoadBalancer: QUOTAS.listenersPerLoadBalancer.ceiling + 1 },
      { rulesPerListener: QUOTAS.rulesPerListener.ceiling + 1 },
      { notAQuota: 1 },
      {},
    ];
    for (const body of cases) {
      const res = await call(t.app, ADMIN_TOKEN, 'PATCH', `/v1/tenants/${a.tenantId}/quotas`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('validation_failed');
    }
    expect((await setQuotas('tnt-aaaaaaaaaaaaaaaaaaaa', { acls: 1 })).status).toBe(404);
    expect(await dumpDatabase(t.app)).toBe(before);
  });

  it('SLB_QUOTA_DEFAULTS sets the deployment defaults; a bad value stops the process with a reason', async () => {
    const config = loadConfig({ SLB_QUOTA_DEFAULTS: 'loadBalancers=2, certificates=0' });
    expect(config.quotaDefaults).toMatchObject({ loadBalancers: 2, certificates: 0, acls: DEFAULT_QUOTAS.acls });
    expect(() => loadConfig({ SLB_QUOTA_DEFAULTS: 'lbs=2' })).toThrow(/SLB_QUOTA_DEFAULTS lbs is not a quota/);
    expect(() => loadConfig({ SLB_QUOTA_DEFAULTS: 'rulesPerListener=1001' })).toThrow(/at most 1000/);
    expect(() => loadConfig({ SLB_QUOTA_DEFAULTS: 'acls' })).toThrow(/not name=limit/);

    const other = await makeApp(undefined, { quotaDefaults: config.quotaDefaults });
    try {
      const tenant = await call(other.app, ADMIN_TOKEN, 'POST', '/v1/tenants', { name: 'small' });
      const token = (await call(other.app, ADMIN_TOKEN, 'POST', `/v1/tenants/${tenant.body.id}/tokens`, {})).body.token;
      for (const name of ['a', 'b']) {
        expect((await call(other.app, token, 'POST', '/v1/load-balancers', { name })).status).toBe(201);
      }
      const over = await call(other.app, token, 'POST', '/v1/load-balancers', { name: 'c' });
      expect(over.body.quota).toMatchObject({ name: 'loadBalancers', limit: 2, usage: 2 });
    } finally {
      await other.close();
    }
  });
});

describe('racing for the last slot', () => {
  it('many concurrent creates over real HTTP at the limit create exactly the limit', async () => {
    const { tenantId, token } = await newTenant(t.app, 'racer');
    await setQuotas(tenantId, { loadBalancers: 5, acls: 3 });
    const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const post = (path: string, body: unknown) =>
      fetch(`${address}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      }).then((r) => r.status);
    const lbs = await Promise.all(Array.from({ length: 40 }, (_, i) => post('/v1/load-balancers', { name: `r${i}` })));
    expect(lbs.filter((s) => s === 201)).toHaveLength(5);
    expect(lbs.filter((s) => s === 409)).toHaveLength(35);
    const acls = await Promise.all(Array.from({ length: 40 }, (_, i) => post('/v1/acls', { name: `a${i}` })));
    expect(acls.filter((s) => s === 201)).toHaveLength(3);
    expect(await usageOf(token)).toMatchObject({ loadBalancers: 5, acls: 3 });
  }, 60_000);
});
