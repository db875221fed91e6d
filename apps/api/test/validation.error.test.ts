import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, dumpDatabase, makeApp, makeCertificate, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

let t: TestApp;
let token: string;
let lbId: string;
let sgId: string;
let otherSgId: string;
let tcpId: string;
let httpId: string;
let otherLbId: string;
let serverId: string;
let certId: string;
let aclId: string;

beforeAll(async () => {
  t = await makeApp();
  token = (await newTenant(t.app)).token;
  ({ lbId, sgId } = await newLoadBalancer(t.app, token));
  ({ lbId: otherLbId, sgId: otherSgId } = await newLoadBalancer(t.app, token));
  const base = `/v1/load-balancers/${lbId}`;
  tcpId = (await call(t.app, token, 'POST', `${base}/listeners`, { protocol: 'tcp', port: 80, serverGroupId: sgId }))
    .body.id;
  httpId = (
    await call(t.app, token, 'POST', `${base}/listeners`, { protocol: 'http', port: 8080, serverGroupId: sgId })
  ).body.id;
  serverId = (await call(t.app, token, 'GET', `${base}/server-groups/${sgId}`)).body.servers[0].id;
  certId = (await call(t.app, token, 'POST', '/v1/certificates', { name: 'c', ...makeCertificate('a.example') })).body
    .id;
  aclId = (await call(t.app, token, 'POST', '/v1/acls', { name: 'office', entries: [{ cidr: '10.0.0.0/8' }] })).body.id;
});
afterAll(() => t.close());

const lsn = (extra: Record<string, unknown>) => ({ protocol: 'tcp', port: 81, serverGroupId: '$sg', ...extra });

type Case = [
  name: string,
  method: 'POST' | 'PATCH' | 'DELETE' | 'GET',
  path: string,
  body: unknown,
  status: number,
  field?: string,
];

// Paths and bodies use $lb, $sg, ... placeholders, filled in once the fixtures exist.
const cases: Case[] = [
  ['port 0', 'POST', '$lb/listeners', lsn({ port: 0 }), 400, '/body/port'],
  ['port 65536', 'POST', '$lb/listeners', lsn({ port: 65536 }), 400, '/body/port'],
  ['port as a string', 'POST', '$lb/listeners', lsn({ port: '81' }), 400, '/body/port'],
  ['port fractional', 'POST', '$lb/listeners', lsn({ port: 81.5 }), 400, '/body/port'],
  ['backendPort 70000', 'POST', '$lb/listeners', lsn({ backendPort: 70000 }), 400, '/body/backendPort'],
  ['unknown protocol', 'POST', '$lb/listeners', lsn({ protocol: 'sctp' }), 400, '/body/protocol'],
  ['unknown field', 'POST', '$lb/listeners', lsn({ colour: 'red' }), 400, '/body/colour'],
  [
    'unknown nested field',
    'POST',
    '$lb/listeners',
    lsn({ healthCheck: { intervall: 3 } }),
    400,
    '/body/healthCheck/intervall',
  ],
  ['missing serverGroupId', 'POST', '$lb/listeners', { protocol: 'tcp', port: 81 }, 400, '/body/serverGroupId'],
  ['health timeout 0', 'POST', '$lb/listeners', lsn({ healthCheck: { timeout: 0 } }), 400, '/body/healthCheck/timeout'],
  [
    'health timeout 301',
    'POST',
    '$lb/listeners',
    lsn({ healthCheck: { timeout: 301 } }),
    400,
    '/body/healthCheck/timeout',
  ],
  [
    'health interval 51',
    'POST',
    '$lb/listeners',
    lsn({ healthCheck: { interval: 51 } }),
    400,
    '/body/healthCheck/interval',
  ],
  [
    'health interval 0',
    'POST',
    '$lb/listeners',
    lsn({ healthCheck: { interval: 0 } }),
    400,
    '/body/healthCheck/interval',
  ],
  [
    'healthyThreshold 1',
    'POST',
    '$lb/listeners',
    lsn({ healthCheck: { healthyThreshold: 1 } }),
    400,
    '/body/healthCheck/healthyThreshold',
  ],
  [
    'unhealthyThreshold 11',
    'POST',
    '$lb/listeners',
    lsn({ healthCheck: { unhealthyThreshold: 11 } }),
    400,
    '/body/healthCheck/unhealthyThreshold',
  ],
  [
    'http code class unknown',
    'POST',
    '$lb/listeners',
    lsn({ protocol: 'http', healthCheck: { httpCodes: ['http_6xx'] } }),
    400,
    '/body/healthCheck/httpCodes/0',
  ],
  [
    'sticky session on tcp',
    'POST',
    '$lb/listeners',
    lsn({ stickySession: { mode: 'insert' } }),
    422,
    '/body/stickySession',
  ],
  [
    'persistenceTimeout on http',
    'POST',
    '$lb/listeners',
    lsn({ protocol: 'http', persistenceTimeout: 30 }),
    422,
    '/body/persistenceTimeout',
  ],
  [
    'https without certificate',
    'POST',
    '$lb/listeners',
    lsn({ protocol: 'https', port: 443 }),
    422,
    '/body/certificateId',
  ],
  [
    'certificate on http',
    'POST',
    '$lb/listeners',
    lsn({ protocol: 'http', certificateId: '$cert' }),
    422,
    '/body/certificateId',
  ],
  [
    'unknown certificate',
    'POST',
    '$lb/listeners',
    lsn({ protocol: 'https', port: 443, certificateId: 'cert-nope' }),
    422,
    '/body/certificateId',
  ],
  [
    'udp health check on tcp',
    'POST',
    '$lb/listeners',
    lsn({ healthCheck: { type: 'udp' } }),
    422,
    '/body/healthCheck/type',
  ],
  [
    'tcp health check on udp',
    'POST',
    '$lb/listeners',
    lsn({ protocol: 'udp', healthCheck: { type: 'tcp' } }),
    422,
    '/body/healthCheck/type',
  ],
  [
    'http check fields on tcp check',
    'POST',
    '$lb/listeners',
    lsn({ healthCheck: { path: '/x' } }),
    422,
    '/body/healthCheck/path',
  ],
  [
    'sch scheduler on http',
    'POST',
    '$lb/listeners',
    lsn({ protocol: 'http', scheduler: 'sch' }),
    422,
    '/body/scheduler',
  ],
  ['requestTimeout on tcp', 'POST', '$lb/listeners', lsn({ requestTimeout: 30 }), 422, '/body/requestTimeout'],
  [
    'xForwardedFor on udp',
    'POST',
    '$lb/listeners',
    lsn({ protocol: 'udp', xForwardedFor: true }),
    422,
    '/body/xForwardedFor',
  ],
  [
    'xForwardedForMode on tcp',
    'POST',
    '$lb/listeners',
    lsn({ xForwardedForMode: 'append' }),
    422,
    '/body/xForwardedForMode',
  ],
  [
    'unknown xForwardedForMode',
    'POST',
    '$lb/listeners',
    lsn({ protocol: 'http', xForwardedForMode: 'prepend' }),
    400,
    '/body/xForwardedForMode',
  ],
  [
    'PROXY v1 on udp',
    'POST',
    '$lb/listeners',
    lsn({ protocol: 'udp', proxyProtocol: 'v1' }),
    422,
    '/body/proxyProtocol',
  ],
  [
    'server-mode sticky without cookie',
    'POST',
    '$lb/listeners',
    lsn({ protocol: 'http', stickySession: { mode: 'server' } }),
    422,
    '/body/stickySession/cookieName',
  ],
  ['unknown acl', 'POST', '$lb/listeners', lsn({ acl: { aclId: 'acl-nope', mode: 'deny' } }), 422, '/body/acl/aclId'],
  ['unknown server group', 'POST', '$lb/listeners', lsn({ serverGroupId: 'sg-nope' }), 422, '/body/serverGroupId'],
  [
    'server group of another LB',
    'POST',
    '$lb/listeners',
    lsn({ serverGroupId: '$othersg' }),
    409,
    '/body/serverGroupId',
  ],
  ['tcp port taken by tcp', 'POST', '$lb/listeners', lsn({ port: 80 }), 409, '/body/port'],
  [
    'tcp port taken by http',
    'POST',
    '$lb/listeners',
    lsn({ protocol: 'https', port: 8080, certificateId: '$cert' }),
    409,
    '/body/port',
  ],
  [
    'sticky on tcp via PATCH',
    'PATCH',
    '$lb/listeners/$tcp',
    { stickySession: { mode: 'insert' } },
    422,
    '/body/stickySession',
  ],
  ['empty PATCH', 'PATCH', '$lb/listeners/$tcp', {}, 400],
  [
    'weight 101',
    'POST',
    '$lb/server-groups/$sg/servers',
    { servers: [{ address: '127.0.0.9', port: 1, weight: 101 }] },
    400,
    '/body/servers/0/weight',
  ],
  ['weight -1', 'PATCH', '$lb/server-groups/$sg/servers/$srv', { weight: -1 }, 400, '/body/weight'],
  [
    'server port 0',
    'POST',
    '$lb/server-groups/$sg/servers',
    { servers: [{ address: '127.0.0.9', port: 0 }] },
    400,
    '/body/servers/0/port',
  ],
  [
    'server address not an IP',
    'POST',
    '$lb/server-groups/$sg/servers',
    { servers: [{ address: 'example.com', port: 80 }] },
    422,
    '/body/servers/0/address',
  ],
  [
    'duplicate server',
    'POST',
    '$lb/server-groups/$sg/servers',
    { servers: [{ address: '127.0.0.1', port: 9001 }] },
    409,
    '/body/servers/0',
  ],
  ['empty server batch', 'POST', '$lb/server-groups/$sg/servers', { servers: [] }, 400, '/body/servers'],
  ['server group in use', 'DELETE', '$lb/server-groups/$sg', undefined, 409],
  ['rule on a tcp listener', 'POST', '$lb/listeners/$tcp/rules', { path: '/a', serverGroupId: '$sg' }, 422],
  ['rule without domain or path', 'POST', '$lb/listeners/$http/rules', { serverGroupId: '$sg' }, 422, '/body/domain'],
  [
    'rule with a bad domain',
    'POST',
    '$lb/listeners/$http/rules',
    { domain: 'a..b', serverGroupId: '$sg' },
    400,
    '/body/domain',
  ],
  [
    'rule path without slash',
    'POST',
    '$lb/listeners/$http/rules',
    { path: 'api', serverGroupId: '$sg' },
    400,
    '/body/path',
  ],
  [
    'rule group of another LB',
    'POST',
    '$lb/listeners/$http/rules',
    { path: '/a', serverGroupId: '$othersg' },
    409,
    '/body/serverGroupId',
  ],
  [
    'spread without nodeCount',
    'POST',
    '/v1/load-balancers',
    { name: 'x', placement: { mode: 'spread' } },
    422,
    '/body/placement/nodeCount',
  ],
  [
    'nodeCount with all',
    'POST',
    '/v1/load-balancers',
    { name: 'x', placement: { mode: 'all', nodeCount: 2 } },
    422,
    '/body/placement/nodeCount',
  ],
  ['empty name', 'POST', '/v1/load-balancers', { name: '' }, 400, '/body/name'],
  ['name of 81 chars', 'POST', '/v1/load-balancers', { name: 'x'.repeat(81) }, 400, '/body/name'],
  ['addressType unknown', 'POST', '/v1/load-balancers', { name: 'x', addressType: 'public' }, 400, '/body/addressType'],
  ['body is an array', 'POST', '/v1/load-balancers', [{ name: 'x' }], 400],
  ['body is null', 'POST', '/v1/load-balancers', 'null', 400],
  ['invalid JSON', 'POST', '/v1/load-balancers', '{"name":', 400],
  ['__proto__ in body', 'POST', '/v1/load-balancers', '{"name":"x","__proto__":{"admin":true}}', 400],
  [
    'acl CIDR invalid',
    'POST',
    '/v1/acls',
    { name: 'a', entries: [{ cidr: '10.0.0.0/33' }] },
    422,
    '/body/entries/0/cidr',
  ],
  [
    'acl CIDR not an address',
    'POST',
    '/v1/acls',
    { name: 'a', entries: [{ cidr: 'ten/8' }] },
    422,
    '/body/entries/0/cidr',
  ],
  [
    'acl CIDR with host bits',
    'POST',
    '/v1/acls',
    { name: 'a', entries: [{ cidr: '10.0.0.1/8' }] },
    422,
    '/body/entries/0/cidr',
  ],
  [
    'acl IPv6 CIDR invalid',
    'POST',
    '/v1/acls',
    { name: 'a', entries: [{ cidr: '2001:db8::/129' }] },
    422,
    '/body/entries/0/cidr',
  ],
  [
    'acl IPv6 with host bits',
    'POST',
    '/v1/acls',
    { name: 'a', entries: [{ cidr: '2001:db8::1/64' }] },
    422,
    '/body/entries/0/cidr',
  ],
  [
    'acl duplicate entry',
    'POST',
    '/v1/acls',
    { name: 'a', entries: [{ cidr: '10.0.0.0/8' }, { cidr: '10.0.0.0/8' }] },
    422,
    '/body/entries/1/cidr',
  ],
  ['acl in use', 'DELETE', '/v1/acls/$acl', undefined, 204],
  [
    'certificate garbage',
    'POST',
    '/v1/certificates',
    { name: 'c', certificate: 'nope', privateKey: 'nope' },
    422,
    '/body/certificate',
  ],
  ['limit 501', 'GET', '/v1/load-balancers?limit=501', undefined, 400, '/querystring/limit'],
  ['limit 0', 'GET', '/v1/load-balancers?limit=0', undefined, 400, '/querystring/limit'],
  ['cursor forged', 'GET', '/v1/load-balancers?cursor=Zm9v', undefined, 400, '/querystring/cursor'],
  ['unknown query parameter', 'GET', '/v1/load-balancers?colour=red', undefined, 400, '/querystring/colour'],
];

function fill(text: string): string {
  return text
    .replaceAll('$otherlb', `/v1/load-balancers/${otherLbId}`)
    .replaceAll('$lb', `/v1/load-balancers/${lbId}`)
    .replaceAll('$othersg', otherSgId)
    .replaceAll('$sg', sgId)
    .replaceAll('$tcp', tcpId)
    .replaceAll('$http', httpId)
    .replaceAll('$srv', serverId)
    .replaceAll('$cert', certId)
    .replaceAll('$acl', aclId);
}

describe('validation: every rule answers the exact status with problem+json naming the field, and changes nothing', () => {
  it.each(cases)('%s → %s %s', async (_name, method, path, body, status, field) => {
    const before = dumpDatabase(t.app);
    const payload =
      body === undefined ? undefined : typeof body === 'string' ? body : JSON.parse(fill(JSON.stringify(body)));
    const res = await call(t.app, token, method, fill(path), payload);
    expect(res.status).toBe(status);
    if (status >= 400) {
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({
        status,
        type: expect.any(String),
        title: expect.any(String),
        detail: expect.any(String),
      });
      if (field) expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(field);
      expect(dumpDatabase(t.app)).toBe(before);
    }
  });

  it('an ACL in use by a listener cannot be deleted (409), and a udp listener may share a tcp port', async () => {
    const acl = await call(t.app, token, 'POST', '/v1/acls', {
      name: 'v6',
      entries: [{ cidr: '2001:db8::/32' }, { cidr: '::1/128' }],
    });
    expect(acl.status).toBe(201);
    const udp = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
      protocol: 'udp',
      port: 80,
      serverGroupId: sgId,
      acl: { aclId: acl.body.id, mode: 'allow' },
    });
    expect(udp.status).toBe(201);
    const refused = await call(t.app, token, 'DELETE', `/v1/acls/${acl.body.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('in_use');
  });

  it('a certificate whose key does not match is 422 and the key never comes back', async () => {
    const a = makeCertificate('a.example');
    const b = makeCertificate('b.example');
    const mismatch = await call(t.app, token, 'POST', '/v1/certificates', {
      name: 'm',
      certificate: a.certificate,
      privateKey: b.privateKey,
    });
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.errors[0].path).toBe('/body/privateKey');
    const ok = await call(t.app, token, 'POST', '/v1/certificates', {
      name: 'ok',
      ...makeCertificate('shop.example', ['shop.example', '*.shop.example']),
    });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ subject: 'CN=shop.example', sans: ['shop.example', '*.shop.example'] });
    expect(ok.body.fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    expect(Date.parse(ok.body.notAfter)).toBeGreaterThan(Date.now());
    const read = await call(t.app, token, 'GET', `/v1/certificates/${ok.body.id}`);
    const list = await call(t.app, token, 'GET', '/v1/certificates');
    for (const text of [JSON.stringify(ok.body), JSON.stringify(read.body), JSON.stringify(list.body)]) {
      expect(text).not.toContain('PRIVATE KEY');
      expect(text).not.toContain('privateKey');
    }
  });

  it('body over 1 MiB is 413, wrong content type is 415, and neither changes anything', async () => {
    const before = dumpDatabase(t.app);
    const big = await t.app.inject({
      method: 'POST',
      url: '/v1/load-balancers',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'x', tags: { a: 'y'.repeat(1024 * 1024) } }),
    });
    expect(big.statusCode).toBe(413);
    expect(big.headers['content-type']).toMatch(/problem\+json/);
    const text = await t.app.inject({
      method: 'POST',
      url: '/v1/load-balancers',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain' },
      payload: 'name=x',
    });
    expect(text.statusCode).toBe(415);
    expect(JSON.parse(text.body).code).toBe('unsupported_media_type');
    expect(dumpDatabase(t.app)).toBe(before);
  });
});
