import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, dumpDatabase, makeApp, makeCertificate, newLoadBalancer, newTenant, type TestApp } from './helpers.js';
import { cases } from './validation-cases.js';

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
    const before = await dumpDatabase(t.app);
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
      expect(await dumpDatabase(t.app)).toBe(before);
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
    const before = await dumpDatabase(t.app);
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
    expect(await dumpDatabase(t.app)).toBe(before);
  });
});
