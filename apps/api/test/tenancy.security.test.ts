import { readFileSync } from 'node:fs';
import { newId } from '@slb/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  call,
  dumpDatabase,
  insertNode,
  makeApp,
  makeCertificate,
  newLoadBalancer,
  newTenant,
  SQLITE_ONLY,
  type TestApp,
} from './helpers.js';
import { type Operation, operationsOf } from './openapi-fuzz.js';

// Authentication and tenancy for every operation of the OpenAPI document: a new route is covered as soon
// as it is classified below, and the suite fails until it is.

const document = JSON.parse(readFileSync(new URL('../../../openapi/openapi.json', import.meta.url), 'utf8'));
const operations = operationsOf(document);

/** tenant: a member reaches its own tenant's resources only. admin: cluster-wide, members get 403. */
const CLASSIFICATION: Record<string, 'tenant' | 'admin'> = {
  listLoadBalancers: 'tenant',
  createLoadBalancer: 'tenant',
  getLoadBalancer: 'tenant',
  updateLoadBalancer: 'tenant',
  deleteLoadBalancer: 'tenant',
  getLoadBalancerHealth: 'tenant',
  listLoadBalancerEvents: 'tenant',
  getLoadBalancerMetrics: 'tenant',
  getListenerMetrics: 'tenant',
  listServerGroups: 'tenant',
  createServerGroup: 'tenant',
  getServerGroup: 'tenant',
  updateServerGroup: 'tenant',
  deleteServerGroup: 'tenant',
  addServers: 'tenant',
  getServer: 'tenant',
  updateServer: 'tenant',
  deleteServer: 'tenant',
  listListeners: 'tenant',
  createListener: 'tenant',
  planChanges: 'tenant',
  getListener: 'tenant',
  updateListener: 'tenant',
  deleteListener: 'tenant',
  startListener: 'tenant',
  stopListener: 'tenant',
  listRules: 'tenant',
  createRule: 'tenant',
  getRule: 'tenant',
  updateRule: 'tenant',
  deleteRule: 'tenant',
  listCertificates: 'tenant',
  createCertificate: 'tenant',
  getCertificate: 'tenant',
  deleteCertificate: 'tenant',
  listAcls: 'tenant',
  createAcl: 'tenant',
  getAcl: 'tenant',
  updateAcl: 'tenant',
  deleteAcl: 'tenant',
  listNodes: 'admin',
  getNode: 'admin',
  updateNode: 'admin',
  registerNode: 'admin',
  rotateNodeCredential: 'admin',
  deleteNode: 'admin',
  listAddressPools: 'admin',
  createAddressPool: 'admin',
  getAddressPool: 'admin',
  deleteAddressPool: 'admin',
  listTenants: 'admin',
  createTenant: 'admin',
  getTenant: 'admin',
  listTokens: 'admin',
  createToken: 'admin',
  deleteToken: 'admin',
  getTenantBackendNetworks: 'admin',
  putTenantBackendNetworks: 'admin',

  getQuotas: 'tenant',
  getTenantQuotas: 'tenant',
  updateTenantQuotas: 'admin',
};
/**
 * Routes outside the document that answer without a token. `/control/v1/namespace` gives health workers the
 * deployment's Redis names (no secret: a queue name and two key prefixes).
 */
/** `/console` is the web console's page and assets: the app asks for a token itself. */
const PUBLIC_ROUTES = ['/openapi.json', '/healthz', '/readyz', '/metrics', '/control/v1/namespace', '/console'];
/** Routes outside the document for nodes, which present a join token instead (and get 401 without one). */
const NODE_ROUTES = ['/control/v1/enroll'];

interface Fixture {
  tenantId: string;
  tokenId: string;
  token: string;
  ids: Record<string, string>;
}

const pem = makeCertificate('security.example');
/** A valid body for each write, naming the victim's resources where it names any. */
const BODIES: Record<string, (ids: Record<string, string>) => unknown> = {
  // A dry run naming the victim's LB: 404 for anyone else, exactly as the write it stands for.
  planChanges: (ids) => ({ operations: [{ op: 'updateLoadBalancer', loadBalancerId: ids.lbId, body: { name: 'x' } }] }),
  createLoadBalancer: () => ({ name: 'x' }),
  updateLoadBalancer: () => ({ name: 'stolen' }),
  createServerGroup: () => ({ name: 'x' }),
  updateServerGroup: () => ({ name: 'x' }),
  addServers: () => ({ servers: [{ address: '127.0.0.50', port: 1 }] }),
  updateServer: () => ({ weight: 1 }),
  createListener: (ids) => ({ protocol: 'tcp', port: 99, serverGroupId: ids.sgId }),
  updateListener: () => ({ idleTimeout: 5 }),
  createRule: (ids) => ({ path: '/b', serverGroupId: ids.sgId }),
  updateRule: () => ({ priority: 1 }),
  createCertificate: () => ({ name: 'x', ...pem }),
  createAcl: () => ({ name: 'x' }),
  updateAcl: () => ({ name: 'x' }),
  updateNode: () => ({ drain: true }),
  registerNode: () => ({ kind: 'l4', address: '127.0.0.201' }),
  createAddressPool: () => ({ cidr: '10.77.0.0/24' }),
  createTenant: () => ({ name: 'x' }),
  createToken: () => ({ name: 'x' }),
  putTenantBackendNetworks: () => ({ networks: ['0.0.0.0/0'] }),

  updateTenantQuotas: () => ({ acls: 10 }),
};

let t: TestApp;
const tenants: Fixture[] = [];
let nodeId: string;
let poolId: string;

beforeAll(async () => {
  t = await makeApp();
  for (const [i, name] of ['alpha', 'beta'].entries()) {
    const { tenantId, token } = await newTenant(t.app, name);
    const tokens = await call(t.app, ADMIN_TOKEN, 'GET', `/v1/tenants/${tenantId}/tokens`);
    const { lbId, sgId, servers } = await newLoadBalancer(t.app, token);
    const lsn = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
      protocol: 'http',
      port: 80 + i,
      serverGroupId: sgId,
    });
    const rule = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners/${lsn.body.id}/rules`, {
      path: '/a',
      serverGroupId: sgId,
    });
    const cert = await call(t.app, token, 'POST', '/v1/certificates', {
      name: 'c',
      ...makeCertificate(`${name}.example`),
    });
    const acl = await call(t.app, token, 'POST', '/v1/acls', { name: 'a', entries: [{ cidr: '192.0.2.0/24' }] });
    for (const res of [lsn, rule, cert, acl]) expect(res.status).toBe(201);
    tenants.push({
      tenantId,
      token,
      tokenId: tokens.body.items[0].id,
      ids: {
        lbId,
        sgId,
        srvId: servers[0]!.id,
        lsnId: lsn.body.id,
        ruleId: rule.body.id,
        certId: cert.body.id,
        aclId: acl.body.id,
      },
    });
  }
  // Nodes only appear by saying hello on the control channel; a row is all the REST routes need.
  nodeId = newId('node');
  await insertNode(t.app, { id: nodeId, kind: 'l4', address: '127.0.0.9' });
  poolId = (await call(t.app, ADMIN_TOKEN, 'GET', '/v1/address-pools')).body.items[0].id;
});
afterAll(() => t.close());

/** The request for `op` aimed at `victim`'s resources (cluster routes name the victim's tenant and token). */
function requestFor(op: Operation, victim: Fixture): { url: string; body?: unknown } {
  const ids: Record<string, string> = {
    ...victim.ids,
    tenantId: victim.tenantId,
    tokenId: victim.tokenId,
    nodeId,
    poolId,
  };
  const url = op.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const id = ids[name];
    if (!id) throw new Error(`no fixture for path parameter ${name} of ${op.operationId}: add one`);
    return id;
  });
  if (!op.body) return { url };
  const body = BODIES[op.operationId];
  if (!body) throw new Error(`no valid body for ${op.operationId}: add one to BODIES`);
  return { url, body: body(ids) };
}

/** Runs `fn` and undoes whatever it wrote, so positive controls leave the fixtures as they were. */
async function rolledBack<T>(fn: () => Promise<T>): Promise<T> {
  t.app.store.sqlite.exec('BEGIN');
  try {
    return await fn();
  } finally {
    t.app.store.sqlite.exec('ROLLBACK');
  }
}

const label = (op: Operation) => `${op.method} ${op.path}`;
/** Operations that name their resources in the body, not the path (a plan's operations): scoped the same way. */
const BODY_SCOPED = new Set(['planChanges']);
const hasPathParams = (op: Operation) => op.path.includes('{');
/** Names another resource, in the path or (a plan) in the body: someone else's answers 404. */
const namesResources = (op: Operation) => hasPathParams(op) || BODY_SCOPED.has(op.operationId);

describe('every operation of the OpenAPI document is classified', () => {
  it('as tenant or admin, with no stale entries', () => {
    const ids = operations.map((op) => op.operationId);
    for (const id of ids) expect(CLASSIFICATION[id], `classify ${id} in tenancy.security.test.ts`).toBeDefined();
    expect(Object.keys(CLASSIFICATION).sort()).toEqual([...ids].sort());
  });

  it('routes outside /v1 are only the public ones, and they answer without a token', async () => {
    const topLevel = t.app
      .printRoutes({ commonPrefix: false })
      .split('\n')
      .map((line) => /^[├└]── (\/\S*)/.exec(line)?.[1])
      .filter((path): path is string => path !== undefined);
    expect(topLevel.filter((path) => !path.startsWith('/v1/')).sort()).toEqual(
      [...PUBLIC_ROUTES, ...NODE_ROUTES].sort(),
    );
    for (const path of PUBLIC_ROUTES) expect((await t.app.inject({ method: 'GET', url: path })).statusCode).toBe(200);
    for (const path of NODE_ROUTES) {
      for (const authorization of [undefined, `Bearer ${ADMIN_TOKEN}`, `Bearer ${tenants[0]!.token}`]) {
        const res = await t.app.inject({ method: 'POST', url: path, headers: authorization ? { authorization } : {} });
        expect(res.statusCode, `${path} with ${authorization ?? 'nothing'}`).toBe(401);
      }
    }
  });
});

// Positive controls are rolled back through the SQLite connection (rolledBack).
describe.skipIf(SQLITE_ONLY)('authentication on every operation', () => {
  let revoked: string;
  beforeAll(async () => {
    const token = await call(t.app, ADMIN_TOKEN, 'POST', `/v1/tenants/${tenants[0]!.tenantId}/tokens`, { name: 'old' });
    expect(
      (await call(t.app, ADMIN_TOKEN, 'DELETE', `/v1/tenants/${tenants[0]!.tenantId}/tokens/${token.body.id}`)).status,
    ).toBe(204);
    revoked = token.body.token;
  });

  const presented = (): [string, Record<string, string>][] => [
    ['no Authorization header', {}],
    ['an unknown token', { authorization: 'Bearer slb_not-a-real-token' }],
    ['a revoked token', { authorization: `Bearer ${revoked}` }],
    ['another scheme', { authorization: `Basic ${ADMIN_TOKEN}` }],
    ['Bearer without a token', { authorization: 'Bearer' }],
    ['two tokens', { authorization: `Bearer ${ADMIN_TOKEN} ${ADMIN_TOKEN}` }],
    ['the token in a query string', {}],
  ];

  it.each(operations.map((op) => [label(op), op] as const))('%s: 401 problem+json, nothing changes', async (_n, op) => {
    const { url, body } = requestFor(op, tenants[0]!);
    const before = await dumpDatabase(t.app);
    for (const [what, headers] of presented()) {
      const target = what === 'the token in a query string' ? `${url}?access_token=${ADMIN_TOKEN}` : url;
      const res = await call(t.app, null, op.method, target, body, headers);
      expect(res.status, `${label(op)} with ${what}`).toBe(401);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['www-authenticate']).toContain('Bearer');
    }
    expect(await dumpDatabase(t.app)).toBe(before);
  });

  it.each(operations.map((op) => [label(op), op] as const))(
    '%s: a percent-encoded path reaches the same route and the same guard',
    async (_n, op) => {
      // The router decodes the path, the guard must not look at the raw URL: /%761/… is /v1/….
      const { url, body } = requestFor(op, tenants[0]!);
      const before = await dumpDatabase(t.app);
      for (const encoded of [url.replace('/v1/', '/%761/'), url.replace('/v1/', '/v%31/')]) {
        expect((await call(t.app, null, op.method, encoded, body)).status, encoded).toBe(401);
        const member = await rolledBack(() => call(t.app, tenants[1]!.token, op.method, encoded, body));
        if (CLASSIFICATION[op.operationId] === 'admin') expect(member.status, encoded).toBe(403);
        else if (namesResources(op)) expect(member.status, encoded).toBe(404);
        else expect(member.status, encoded).toBeLessThan(300);
      }
      expect(await dumpDatabase(t.app)).toBe(before);
    },
  );
});

describe.skipIf(SQLITE_ONLY)('tenant isolation on every tenant operation', () => {
  const tenantOps = operations.filter((op) => CLASSIFICATION[op.operationId] === 'tenant');

  for (const [attacker, victim] of [
    [1, 0],
    [0, 1],
  ] as const) {
    it.each(tenantOps.filter(namesResources).map((op) => [label(op), op] as const))(
      `%s: tenant ${attacker} gets 404 for tenant ${victim}'s resource and changes nothing`,
      async (_n, op) => {
        const { url, body } = requestFor(op, tenants[victim]!);
        const before = await dumpDatabase(t.app);
        const res = await call(t.app, tenants[attacker]!.token, op.method, url, body);
        expect(res.status, `${label(op)}: ${JSON.stringify(res.body)}`).toBe(404);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(await dumpDatabase(t.app)).toBe(before);
        // The control: the owner reaches the same resource with the same request, so the 404 was tenancy.
        const own = await rolledBack(() => call(t.app, tenants[victim]!.token, op.method, url, body));
        expect([401, 403, 404], `${label(op)} by its owner: ${JSON.stringify(own.body)}`).not.toContain(own.status);
        expect(own.status).toBeLessThan(500);
      },
    );
  }

  it.each(tenantOps.filter((op) => op.method === 'GET' && !hasPathParams(op)).map((op) => [label(op), op] as const))(
    '%s: a member lists only its own tenant',
    async (_n, op) => {
      for (const [own, other] of [
        [0, 1],
        [1, 0],
      ] as const) {
        const res = await call(t.app, tenants[own]!.token, 'GET', op.path);
        expect(res.status).toBe(200);
        const text = JSON.stringify(res.body);
        for (const id of Object.values(tenants[other]!.ids)) expect(text).not.toContain(id);
        expect(res.body.items.length).toBeGreaterThan(0);
      }
    },
  );

  it.each(tenantOps.filter((op) => op.method === 'POST' && !namesResources(op)).map((op) => [label(op), op] as const))(
    '%s: what a member creates belongs to its own tenant',
    async (_n, op) => {
      await rolledBack(async () => {
        const { url, body } = requestFor(op, tenants[0]!);
        const res = await call(t.app, tenants[1]!.token, 'POST', url, body);
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        expect((await call(t.app, tenants[0]!.token, 'GET', `${url}/${res.body.id}`)).status).toBe(404);
        expect((await call(t.app, tenants[1]!.token, 'GET', `${url}/${res.body.id}`)).status).toBe(200);
      });
    },
  );

  it("a listener cannot use another tenant's certificate, ACL or server group", async () => {
    const [a, b] = tenants as [Fixture, Fixture];
    const url = `/v1/load-balancers/${a.ids.lbId}/listeners`;
    const before = await dumpDatabase(t.app);
    const cert = await call(t.app, a.token, 'POST', url, {
      protocol: 'https',
      port: 443,
      serverGroupId: a.ids.sgId,
      certificateId: b.ids.certId,
    });
    expect(cert.status).toBe(422);
    const acl = await call(t.app, a.token, 'POST', url, {
      protocol: 'tcp',
      port: 22,
      serverGroupId: a.ids.sgId,
      acl: { aclId: b.ids.aclId, mode: 'deny' },
    });
    expect(acl.status).toBe(422);
    // Another tenant's group must look absent (422), not "belongs to another LB" (409), which would leak it.
    const sg = await call(t.app, a.token, 'POST', url, { protocol: 'tcp', port: 22, serverGroupId: b.ids.sgId });
    expect(sg.status).toBe(422);
    const rule = await call(t.app, a.token, 'POST', `${url}/${a.ids.lsnId}/rules`, {
      path: '/x',
      serverGroupId: b.ids.sgId,
    });
    expect([404, 422]).toContain(rule.status);
    expect(await dumpDatabase(t.app)).toBe(before);
  });
});

describe.skipIf(SQLITE_ONLY)('cluster operations', () => {
  const adminOps = operations.filter((op) => CLASSIFICATION[op.operationId] === 'admin');

  it.each(adminOps.map((op) => [label(op), op] as const))(
    '%s: 403 for a member token, nothing changes; an admin gets through',
    async (_n, op) => {
      const { url, body } = requestFor(op, tenants[1]!);
      const before = await dumpDatabase(t.app);
      for (const fixture of tenants) {
        const res = await call(t.app, fixture.token, op.method, url, body);
        expect(res.status, `${label(op)}: ${JSON.stringify(res.body)}`).toBe(403);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      }
      expect(await dumpDatabase(t.app)).toBe(before);
      const admin = await rolledBack(() => call(t.app, ADMIN_TOKEN, op.method, url, body));
      expect([401, 403, 404], `${label(op)} as admin: ${JSON.stringify(admin.body)}`).not.toContain(admin.status);
      expect(admin.status).toBeLessThan(500);
    },
  );
});

describe('tokens', () => {
  it('a token is shown once, stored hashed, and stops working when revoked', async () => {
    const tenant = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/tenants', { name: 'gamma' });
    const created = await call(t.app, ADMIN_TOKEN, 'POST', `/v1/tenants/${tenant.body.id}/tokens`, { name: 'ci' });
    expect(created.body.token).toMatch(/^slb_/);
    const secret: string = created.body.token;
    expect(await dumpDatabase(t.app)).not.toContain(secret);
    const listed = await call(t.app, ADMIN_TOKEN, 'GET', `/v1/tenants/${tenant.body.id}/tokens`);
    expect(JSON.stringify(listed.body)).not.toContain(secret);
    expect((await call(t.app, secret, 'GET', '/v1/load-balancers')).status).toBe(200);
    expect(
      (await call(t.app, ADMIN_TOKEN, 'DELETE', `/v1/tenants/${tenant.body.id}/tokens/${created.body.id}`)).status,
    ).toBe(204);
    expect((await call(t.app, secret, 'GET', '/v1/load-balancers')).status).toBe(401);
  });
});

describe('rate limiting', () => {
  it('answers 429 problem+json with Retry-After once a token exceeds its rate, per token', async () => {
    const limited = await makeApp(undefined, { rateLimit: { rps: 1, burst: 3 } });
    try {
      const statuses: number[] = [];
      let last: Awaited<ReturnType<typeof call>> | null = null;
      for (let i = 0; i < 5; i++) {
        last = await call(limited.app, ADMIN_TOKEN, 'GET', '/v1/load-balancers');
        statuses.push(last.status);
      }
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      expect(last!.headers['retry-after']).toBe('1');
      expect(last!.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(last!.body.code).toBe('rate_limited');
      // Unauthenticated callers are limited by address, so guessing tokens is slowed down too.
      const guesses: number[] = [];
      for (let i = 0; i < 5; i++)
        guesses.push((await call(limited.app, 'slb_guess', 'GET', '/v1/load-balancers')).status);
      expect(guesses).toEqual([401, 401, 401, 429, 429]);
    } finally {
      await limited.close();
    }
  });
});
