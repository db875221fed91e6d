import type { AddressInfo } from 'node:net';
import { createSlbClient } from '@slb/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeApp, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

// The README tour sends `content-type: application/json` on every request, body or not, and so does a
// client configured with a default content-type header: an empty body must count as no body.
let t: TestApp;
let base: string;
let token: string;
let lbId: string;
let sgId: string;
let lsnId: string;

const send = (method: string, path: string, body?: string) =>
  fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body }),
  });

beforeAll(async () => {
  t = await makeApp();
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  ({ token } = await newTenant(t.app));
  ({ lbId, sgId } = await newLoadBalancer(t.app, token));
  const lsn = await send(
    'POST',
    `/v1/load-balancers/${lbId}/listeners`,
    JSON.stringify({ protocol: 'tcp', port: 5432, serverGroupId: sgId }),
  );
  lsnId = ((await lsn.json()) as { id: string }).id;
});
afterAll(() => t.close());

describe('a body-less request with content-type: application/json', () => {
  it('stops and starts a listener', async () => {
    const stop = await send('POST', `/v1/load-balancers/${lbId}/listeners/${lsnId}/stop`);
    expect(stop.status, await stop.clone().text()).toBe(200);
    const start = await send('POST', `/v1/load-balancers/${lbId}/listeners/${lsnId}/start`, '');
    expect(start.status, await start.clone().text()).toBe(200);
  });

  it('deletes a listener and a server group', async () => {
    const lsn = await send('DELETE', `/v1/load-balancers/${lbId}/listeners/${lsnId}`);
    expect(lsn.status, await lsn.clone().text()).toBe(204);
    const sg = await send('DELETE', `/v1/load-balancers/${lbId}/server-groups/${sgId}`, '');
    expect(sg.status, await sg.clone().text()).toBe(204);
  });

  it('deletes through @slb/client with a default content-type header', async () => {
    const slb = createSlbClient({ baseUrl: base, token, headers: { 'content-type': 'application/json' } });
    const { response } = await slb.DELETE('/v1/load-balancers/{lbId}', { params: { path: { lbId } } });
    expect(response.status).toBe(204);
  });

  it('still refuses an empty body where a body is required, as a validation error naming it', async () => {
    const res = await send('POST', '/v1/load-balancers', '');
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = (await res.json()) as { errors?: { path: string }[] };
    expect(body.errors?.map((e) => e.path)).toContain('/body');
  });

  it('still refuses a body that is not JSON', async () => {
    const res = await send('POST', `/v1/load-balancers/${lbId}/listeners/${lsnId}/stop`, '{');
    expect(res.status).toBe(400);
  });
});
