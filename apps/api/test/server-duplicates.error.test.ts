import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, dumpDatabase, makeApp, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

// A duplicate server is named by address:port and its index in the request; a create never names the
// group id it rolled back. Repeated within one request: 422 (the body contradicts itself); already stored
// in the group: 409 (a conflict with state), naming the stored server.
let t: TestApp;
let token: string;
let lbId: string;
let sgId: string;
let stored: { id: string }[];

beforeAll(async () => {
  t = await makeApp();
  ({ token } = await newTenant(t.app));
  ({ lbId, sgId, servers: stored } = await newLoadBalancer(t.app, token));
});
afterAll(() => t.close());

describe('duplicate servers', () => {
  it('in a create: 422 naming the duplicate and its index, no group id, nothing stored', async () => {
    const before = await dumpDatabase(t.app);
    const res = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/server-groups`, {
      name: 'dup',
      servers: [
        { address: '127.0.0.1', port: 9101 },
        { address: '127.0.0.3', port: 9102 },
        { address: '127.0.0.1', port: 9101 },
      ],
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toContain('127.0.0.1:9101');
    expect(res.body.detail).toContain('servers/0');
    expect(res.body.detail).not.toMatch(/sg-/);
    expect(res.body.errors).toEqual([{ path: '/body/servers/2', message: expect.stringContaining('127.0.0.1:9101') }]);
    expect(await dumpDatabase(t.app)).toBe(before);
  });

  it('twice in one batch added to a group: 422 as well', async () => {
    const res = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/server-groups/${sgId}/servers`, {
      servers: [
        { address: '::1', port: 9201 },
        { address: '::1', port: 9201 },
      ],
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toContain('[::1]:9201');
    expect(res.body.errors[0].path).toBe('/body/servers/1');
  });

  it('already in the group: 409 naming the stored server and the index in the request', async () => {
    const res = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/server-groups/${sgId}/servers`, {
      servers: [
        { address: '127.0.0.9', port: 9301 },
        { address: '127.0.0.1', port: 9001 },
      ],
    });
    expect(res.status).toBe(409);
    expect(res.body.detail).toContain('127.0.0.1:9001');
    expect(res.body.detail).toContain('servers/1');
    expect(res.body.detail).toContain(stored[0]!.id);
    expect(res.body.errors[0].path).toBe('/body/servers/1');
  });
});
