import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  call,
  dumpDatabase,
  makeApp,
  makeCertificate,
  newLoadBalancer,
  newTenant,
  type TestApp,
} from './helpers.js';

let t: TestApp;
const tenants: {
  token: string;
  lbId: string;
  sgId: string;
  lsnId: string;
  srvId: string;
  certId: string;
  aclId: string;
  ruleId: string;
}[] = [];

beforeAll(async () => {
  t = await makeApp();
  for (const name of ['alpha', 'beta']) {
    const { token } = await newTenant(t.app, name);
    const { lbId, sgId, servers } = await newLoadBalancer(t.app, token);
    const lsn = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
      protocol: 'http',
      port: 80,
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
    tenants.push({
      token,
      lbId,
      sgId,
      lsnId: lsn.body.id,
      srvId: servers[0]!.id,
      certId: cert.body.id,
      aclId: acl.body.id,
      ruleId: rule.body.id,
    });
  }
});
afterAll(() => t.close());

function routesOf(v: (typeof tenants)[number]): [string, string, unknown?][] {
  const lb = `/v1/load-balancers/${v.lbId}`;
  return [
    ['GET', lb],
    ['PATCH', lb, { name: 'stolen' }],
    ['DELETE', lb],
    ['GET', `${lb}/health`],
    ['GET', `${lb}/server-groups`],
    ['POST', `${lb}/server-groups`, { name: 'x' }],
    ['GET', `${lb}/server-groups/${v.sgId}`],
    ['PATCH', `${lb}/server-groups/${v.sgId}`, { name: 'x' }],
    ['DELETE', `${lb}/server-groups/${v.sgId}`],
    ['POST', `${lb}/server-groups/${v.sgId}/servers`, { servers: [{ address: '127.0.0.50', port: 1 }] }],
    ['GET', `${lb}/server-groups/${v.sgId}/servers/${v.srvId}`],
    ['PATCH', `${lb}/server-groups/${v.sgId}/servers/${v.srvId}`, { weight: 1 }],
    ['DELETE', `${lb}/server-groups/${v.sgId}/servers/${v.srvId}`],
    ['GET', `${lb}/listeners`],
    ['POST', `${lb}/listeners`, { protocol: 'tcp', port: 99, serverGroupId: v.sgId }],
    ['GET', `${lb}/listeners/${v.lsnId}`],
    ['PATCH', `${lb}/listeners/${v.lsnId}`, { idleTimeout: 5 }],
    ['DELETE', `${lb}/listeners/${v.lsnId}`],
    ['POST', `${lb}/listeners/${v.lsnId}/stop`],
    ['POST', `${lb}/listeners/${v.lsnId}/start`],
    ['GET', `${lb}/listeners/${v.lsnId}/rules`],
    ['POST', `${lb}/listeners/${v.lsnId}/rules`, { path: '/b', serverGroupId: v.sgId }],
    ['GET', `${lb}/listeners/${v.lsnId}/rules/${v.ruleId}`],
    ['PATCH', `${lb}/listeners/${v.lsnId}/rules/${v.ruleId}`, { priority: 1 }],
    ['DELETE', `${lb}/listeners/${v.lsnId}/rules/${v.ruleId}`],
    ['GET', `/v1/certificates/${v.certId}`],
    ['DELETE', `/v1/certificates/${v.certId}`],
    ['GET', `/v1/acls/${v.aclId}`],
    ['PATCH', `/v1/acls/${v.aclId}`, { name: 'x' }],
    ['DELETE', `/v1/acls/${v.aclId}`],
  ];
}

describe('tenant isolation', () => {
  for (const [attacker, victim] of [
    [0, 1],
    [1, 0],
  ] as const) {
    it(`tenant ${attacker} sees another tenant's resources as 404 on every route, and changes nothing (${attacker}→${victim})`, async () => {
      const before = dumpDatabase(t.app);
      for (const [method, url, body] of routesOf(tenants[victim]!)) {
        const res = await call(t.app, tenants[attacker]!.token, method as 'GET', url, body);
        expect(res.status, `${method} ${url}`).toBe(404);
      }
      expect(dumpDatabase(t.app)).toBe(before);
    });

    it(`tenant ${attacker} lists only its own resources`, async () => {
      const own = tenants[attacker]!;
      const other = tenants[victim]!;
      for (const url of ['/v1/load-balancers', '/v1/certificates', '/v1/acls']) {
        const text = JSON.stringify((await call(t.app, own.token, 'GET', url)).body);
        expect(text).not.toContain(other.lbId);
        expect(text).not.toContain(other.certId);
        expect(text).not.toContain(other.aclId);
      }
    });
  }

  it("a listener cannot use another tenant's certificate, ACL or server group", async () => {
    const [a, b] = tenants as [(typeof tenants)[0], (typeof tenants)[0]];
    const url = `/v1/load-balancers/${a.lbId}/listeners`;
    const cert = await call(t.app, a.token, 'POST', url, {
      protocol: 'https',
      port: 443,
      serverGroupId: a.sgId,
      certificateId: b.certId,
    });
    expect(cert.status).toBe(422);
    const acl = await call(t.app, a.token, 'POST', url, {
      protocol: 'tcp',
      port: 22,
      serverGroupId: a.sgId,
      acl: { aclId: b.aclId, mode: 'deny' },
    });
    expect(acl.status).toBe(422);
    // Another tenant's group must look absent (422), not "belongs to another LB" (409), which would leak it.
    const sg = await call(t.app, a.token, 'POST', url, { protocol: 'tcp', port: 22, serverGroupId: b.sgId });
    expect(sg.status).toBe(422);
  });
});

describe('authentication and roles', () => {
  it('every /v1 route needs a valid bearer token: 401 problem+json', async () => {
    for (const [method, url, body] of routesOf(tenants[0]!)) {
      for (const token of [null, 'slb_not-a-real-token']) {
        const res = await call(t.app, token, method as 'GET', url, body);
        expect(res.status, `${method} ${url}`).toBe(401);
        expect(res.headers['www-authenticate']).toContain('Bearer');
      }
    }
    expect((await call(t.app, null, 'GET', '/v1/nodes')).status).toBe(401);
    expect((await call(t.app, null, 'POST', '/v1/tenants', { name: 'x' })).status).toBe(401);
  });

  it('members cannot reach cluster routes (403); admins can', async () => {
    const member = tenants[0]!.token;
    expect((await call(t.app, member, 'GET', '/v1/nodes')).status).toBe(403);
    expect((await call(t.app, member, 'PATCH', '/v1/nodes/node-x', { drain: true })).status).toBe(403);
    expect((await call(t.app, member, 'POST', '/v1/tenants', { name: 'x' })).status).toBe(403);
    expect((await call(t.app, member, 'GET', '/v1/tenants')).status).toBe(403);
    expect((await call(t.app, ADMIN_TOKEN, 'GET', '/v1/tenants')).body.items.length).toBeGreaterThanOrEqual(3);
  });

  it('a token is shown once, stored hashed, and stops working when revoked', async () => {
    const tenant = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/tenants', { name: 'gamma' });
    const created = await call(t.app, ADMIN_TOKEN, 'POST', `/v1/tenants/${tenant.body.id}/tokens`, { name: 'ci' });
    expect(created.body.token).toMatch(/^slb_/);
    const secret: string = created.body.token;
    expect(dumpDatabase(t.app)).not.toContain(secret);
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
