import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appWithTenant, call, dumpDatabase, newTenant, type TestApp } from './helpers.js';

let t: TestApp;
let token: string;
beforeAll(async () => {
  ({ t, token } = await appWithTenant());
});
afterAll(() => t.close());

describe('Idempotency-Key', () => {
  it('a retried create with the same key returns the first result and creates nothing more', async () => {
    const headers = { 'idempotency-key': 'create-web-1' };
    const first = await call(t.app, token, 'POST', '/v1/load-balancers', { name: 'web' }, headers);
    expect(first.status).toBe(201);
    const retries = await Promise.all(
      Array.from({ length: 5 }, () => call(t.app, token, 'POST', '/v1/load-balancers', { name: 'web' }, headers)),
    );
    for (const r of retries) {
      expect(r.status).toBe(201);
      expect(r.body).toEqual(first.body);
      expect(r.headers['idempotent-replayed']).toBe('true');
    }
    const list = await call(t.app, token, 'GET', '/v1/load-balancers');
    expect(list.body.items.filter((i: { name: string }) => i.name === 'web')).toHaveLength(1);
  });

  it('the same key with a different request is refused (422) and changes nothing', async () => {
    const headers = { 'idempotency-key': 'create-web-2' };
    await call(t.app, token, 'POST', '/v1/load-balancers', { name: 'a' }, headers);
    const before = await dumpDatabase(t.app);
    const other = await call(t.app, token, 'POST', '/v1/load-balancers', { name: 'b' }, headers);
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('idempotency_key_reused');
    expect(await dumpDatabase(t.app)).toBe(before);
  });

  it('keys are per tenant: another tenant with the same key gets its own resource', async () => {
    const { token: other } = await newTenant(t.app, 'other');
    const headers = { 'idempotency-key': 'shared-key' };
    const a = await call(t.app, token, 'POST', '/v1/load-balancers', { name: 'x' }, headers);
    const b = await call(t.app, other, 'POST', '/v1/load-balancers', { name: 'x' }, headers);
    expect(a.body.id).not.toBe(b.body.id);
  });

  it('a failed create is not remembered: fixing the body and retrying with the key works', async () => {
    const headers = { 'idempotency-key': 'fix-me' };
    expect(
      (await call(t.app, token, 'POST', '/v1/load-balancers', { name: 'x', placement: { mode: 'spread' } }, headers))
        .status,
    ).toBe(422);
    expect(
      (await call(t.app, token, 'POST', '/v1/load-balancers', { name: 'x', placement: { mode: 'spread' } }, headers))
        .status,
    ).toBe(422);
  });
});

describe('ETag and If-Match', () => {
  it('a PATCH or DELETE with a stale If-Match is 412 and changes nothing', async () => {
    const lb = await call(t.app, token, 'POST', '/v1/load-balancers', { name: 'etag' });
    const url = `/v1/load-balancers/${lb.body.id}`;
    const etag = lb.headers.etag as string;
    const first = await call(t.app, token, 'PATCH', url, { name: 'one' }, { 'if-match': etag });
    expect(first.status).toBe(200);
    const before = await dumpDatabase(t.app);
    const stale = await call(t.app, token, 'PATCH', url, { name: 'two' }, { 'if-match': etag });
    expect(stale.status).toBe(412);
    expect(stale.body.code).toBe('precondition_failed');
    expect((await call(t.app, token, 'DELETE', url, undefined, { 'if-match': etag })).status).toBe(412);
    expect(await dumpDatabase(t.app)).toBe(before);
    const fresh = await call(t.app, token, 'DELETE', url, undefined, { 'if-match': first.headers.etag as string });
    expect(fresh.status).toBe(204);
  });
});
