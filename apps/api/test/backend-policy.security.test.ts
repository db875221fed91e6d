import { newId } from '@slb/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloudEndpointDeny } from '../src/domain/cloud-endpoints.js';
import {
  ADMIN_TOKEN,
  call,
  dumpDatabase,
  insertNode,
  LOCAL_BACKEND_POLICY,
  makeApp,
  newTenant,
  type TestApp,
} from './helpers.js';

// A backend is an address the cloud connects to on a tenant's behalf from inside its own network. These
// tests hold the API to the backend address policy: the cloud's own endpoints (Redis, the API, DNS, node
// addresses, an operator's extra entry) in every spelling, the special address classes, and a tenant's
// allowed networks. A refusal is a 422 naming the field, and changes nothing.

const REDIS = 'redis://127.0.0.1:6379';
const EXTRA_DENY = '10.9.9.9:5432'; // the operator's PostgreSQL, from SLB_BACKEND_DENY

let t: TestApp;
let member: { tenantId: string; token: string };
let lbId: string;

beforeAll(async () => {
  const deny = cloudEndpointDeny({ host: '127.0.0.1', port: 8080, dnsPort: 8053, redisUrl: REDIS });
  t = await makeApp(undefined, {
    backendPolicy: { defaultNetworks: [...LOCAL_BACKEND_POLICY.defaultNetworks], deny: [...deny, EXTRA_DENY] },
  });
  // Nodes appear by saying hello on the control channel; a row is all the policy reads.
  await insertNode(t.app, { id: newId('node'), kind: 'l4', address: '127.0.0.11' });
  member = await newTenant(t.app, 'shop');
  const lb = await call(t.app, member.token, 'POST', '/v1/load-balancers', { name: 'web' });
  lbId = lb.body.id;
});
afterAll(() => t.close());

const groupWith = (address: string, port: number) =>
  call(t.app, member.token, 'POST', `/v1/load-balancers/${lbId}/server-groups`, {
    name: 'g',
    servers: [{ address, port }],
  });

describe('the cloud endpoints and special addresses', () => {
  const refused: [string, number, string][] = [
    ['127.0.0.1', 6379, "load balancer service's own endpoints"],
    ['::ffff:127.0.0.1', 6379, "load balancer service's own endpoints"],
    ['::ffff:7f00:1', 6379, "load balancer service's own endpoints"],
    ['0:0:0:0:0:ffff:7f00:0001', 6379, "load balancer service's own endpoints"],
    ['::1', 6379, "load balancer service's own endpoints"],
    ['127.0.0.5', 6379, "load balancer service's own endpoints"],
    ['127.0.0.1', 8080, "load balancer service's own endpoints"],
    ['::ffff:127.0.0.1', 8053, "load balancer service's own endpoints"],
    ['127.0.0.11', 9001, "load balancer service's own endpoints"],
    ['::ffff:127.0.0.11', 9111, "load balancer service's own endpoints"],
    ['0.0.0.0', 6379, 'unspecified'],
    ['::', 6379, 'unspecified'],
    ['::ffff:0.0.0.0', 8080, 'unspecified'],
    ['169.254.169.254', 80, 'link-local'],
    ['::ffff:169.254.169.254', 80, 'link-local'],
    ['fe80::1', 80, 'link-local'],
    ['fe80::1%lo', 80, 'zone id'],
    ['224.0.0.1', 80, 'multicast'],
    ['ff02::1', 80, 'multicast'],
    ['255.255.255.255', 80, 'broadcast'],
    ['::7f00:1', 6379, 'translation prefix'],
    ['64:ff9b::7f00:1', 6379, 'translation prefix'],
  ];

  it.each(refused)(
    'refuses %s port %i with 422 backend_address_denied and stores nothing',
    async (address, port, why) => {
      const before = await dumpDatabase(t.app);
      const res = await groupWith(address, port);
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.headers['content-type']).toContain('application/problem+json');
      expect(res.body.code).toBe('backend_address_denied');
      expect(res.body.errors).toEqual([{ path: '/body/servers/0/address', message: expect.stringContaining(why) }]);
      // The user's own address, never the cloud's list of endpoints.
      for (const internal of ['6379', '8080', '8053', '5432', '10.9.9.9', '127.0.0.11']) {
        if (!`${address} ${port}`.includes(internal)) expect(res.body.detail).not.toContain(internal);
      }
      expect(await dumpDatabase(t.app)).toBe(before);
    },
  );

  it("refuses the operator's extra deny entry (SLB_BACKEND_DENY) even inside the tenant's networks", async () => {
    const res = await groupWith('10.9.9.9', 5432);
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('backend_address_denied');
    expect((await groupWith('10.9.9.9', 5433)).status).toBe(201);
  });

  it("refuses a server at a VIP (any LB's, or free in a pool): the nodes would loop through their own LBs", async () => {
    const lb = await call(t.app, member.token, 'POST', '/v1/load-balancers', { name: 'target' });
    for (const address of [lb.body.address, '127.1.200.200']) {
      const res = await groupWith(address, 80);
      expect(res.status, `${address} ${JSON.stringify(res.body)}`).toBe(422);
      expect(res.body.code).toBe('backend_address_denied');
    }
  });

  it('allows loopback backends of the local cloud on other ports', async () => {
    for (const [address, port] of [
      ['127.0.0.1', 9001],
      ['127.0.0.2', 9002],
      ['::1', 9003],
    ] as const) {
      const res = await groupWith(address, port);
      expect(res.status, `${address}:${port} ${JSON.stringify(res.body)}`).toBe(201);
    }
  });

  it('checks servers added to a group, listing every refused one', async () => {
    const group = await groupWith('127.0.0.1', 9010);
    const before = await dumpDatabase(t.app);
    const res = await call(
      t.app,
      member.token,
      'POST',
      `/v1/load-balancers/${lbId}/server-groups/${group.body.id}/servers`,
      {
        servers: [
          { address: '127.0.0.1', port: 9011 },
          { address: '169.254.169.254', port: 80 },
          { address: '::ffff:7f00:1', port: 6379 },
        ],
      },
    );
    expect(res.status).toBe(422);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual([
      '/body/servers/1/address',
      '/body/servers/2/address',
    ]);
    expect(await dumpDatabase(t.app)).toBe(before);
  });

  it("refuses a listener whose backendPort or health-check port points the group's servers at an endpoint", async () => {
    const group = await groupWith('127.0.0.1', 9020);
    const base = `/v1/load-balancers/${lbId}/listeners`;
    const before = await dumpDatabase(t.app);
    const viaBackendPort = await call(t.app, member.token, 'POST', base, {
      protocol: 'tcp',
      port: 7001,
      backendPort: 6379,
      serverGroupId: group.body.id,
    });
    expect(viaBackendPort.status).toBe(422);
    expect(viaBackendPort.body.errors[0].path).toBe('/body/backendPort');
    const viaHealthPort = await call(t.app, member.token, 'POST', base, {
      protocol: 'tcp',
      port: 7002,
      serverGroupId: group.body.id,
      healthCheck: { port: 8080 },
    });
    expect(viaHealthPort.status).toBe(422);
    expect(viaHealthPort.body.errors[0].path).toBe('/body/healthCheck/port');
    expect(await dumpDatabase(t.app)).toBe(before);

    const ok = await call(t.app, member.token, 'POST', base, {
      protocol: 'tcp',
      port: 7003,
      serverGroupId: group.body.id,
    });
    expect(ok.status).toBe(201);
    const patched = await call(t.app, member.token, 'PATCH', `${base}/${ok.body.id}`, { backendPort: 6379 });
    expect(patched.status).toBe(422);
    expect(patched.body.code).toBe('backend_address_denied');
  });
});

describe("a tenant's allowed backend networks", () => {
  it('are admin-only, validated, and default to the configured networks', async () => {
    const url = `/v1/tenants/${member.tenantId}/backend-networks`;
    expect((await call(t.app, member.token, 'GET', url)).status).toBe(403);
    expect((await call(t.app, member.token, 'PUT', url, { networks: ['0.0.0.0/0'] })).status).toBe(403);
    const initial = await call(t.app, ADMIN_TOKEN, 'GET', url);
    expect(initial.body).toMatchObject({ isDefault: true, networks: expect.arrayContaining(['127.0.0.0/8']) });
    const bad = await call(t.app, ADMIN_TOKEN, 'PUT', url, { networks: ['10.0.0.0/8', '10.0.0.1/8'] });
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0].path).toBe('/body/networks/1');
    expect((await call(t.app, ADMIN_TOKEN, 'GET', url)).body).toEqual(initial.body);
    expect(
      (await call(t.app, ADMIN_TOKEN, 'GET', '/v1/tenants/tnt-00000000000000000000/backend-networks')).status,
    ).toBe(404);
  });

  it('refuse servers outside them once narrowed; existing servers stay but are refused at their next write', async () => {
    const other = await newTenant(t.app, 'other');
    const otherLb = await call(t.app, other.token, 'POST', '/v1/load-balancers', { name: 'o' });
    const existing = await groupWith('127.0.0.1', 9030);
    expect(existing.status).toBe(201);

    const url = `/v1/tenants/${member.tenantId}/backend-networks`;
    const put = await call(t.app, ADMIN_TOKEN, 'PUT', url, {
      networks: ['10.1.0.0/16', '::ffff:10.2.0.0/112', 'fd00:1::/32'],
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ isDefault: false, networks: ['10.1.0.0/16', '10.2.0.0/16', 'fd00:1::/32'] });
    // Every server the tenant has so far is on loopback or 10.9.9.9: all of them are now outside.
    const groups = await call(t.app, member.token, 'GET', `/v1/load-balancers/${lbId}/server-groups?limit=500`);
    const before = groups.body.items.flatMap((g: { servers: unknown[] }) => g.servers).length;
    expect(before).toBeGreaterThan(5);
    expect(put.body.serversOutside).toBe(before);

    const outside = await groupWith('127.0.0.1', 9031);
    expect(outside.status).toBe(422);
    expect(outside.body.errors[0].message).toContain("outside the tenant's allowed backend networks");
    expect((await groupWith('10.3.0.1', 80)).status).toBe(422);
    expect((await groupWith('10.1.2.3', 80)).status).toBe(201);
    expect((await groupWith('::ffff:10.2.0.9', 80)).status).toBe(201);
    expect((await groupWith('fd00:1::5', 80)).status).toBe(201);

    // The server made before stays (and keeps serving) but a change to it is refused; deleting it is not.
    const srv = existing.body.servers[0].id;
    const srvUrl = `/v1/load-balancers/${lbId}/server-groups/${existing.body.id}/servers/${srv}`;
    expect(
      (await call(t.app, member.token, 'GET', `/v1/load-balancers/${lbId}/server-groups/${existing.body.id}`)).body
        .servers,
    ).toHaveLength(1);
    const patch = await call(t.app, member.token, 'PATCH', srvUrl, { weight: 10 });
    expect(patch.status).toBe(422);
    expect(patch.body.code).toBe('backend_address_denied');
    expect(patch.body.errors[0].path).toBe('/params/srvId');
    expect((await call(t.app, member.token, 'DELETE', srvUrl)).status).toBe(204);
    expect((await call(t.app, ADMIN_TOKEN, 'GET', url)).body.serversOutside).toBe(before - 1);

    // Another tenant keeps the default networks.
    const theirs = await call(t.app, other.token, 'POST', `/v1/load-balancers/${otherLb.body.id}/server-groups`, {
      name: 'g',
      servers: [{ address: '127.0.0.1', port: 9031 }],
    });
    expect(theirs.status).toBe(201);

    const reset = await call(t.app, ADMIN_TOKEN, 'PUT', url, { networks: null });
    expect(reset.body.isDefault).toBe(true);
    expect((await groupWith('127.0.0.1', 9032)).status).toBe(201);
  });
});

describe('a node on the shared loopback address (a development setup)', () => {
  it('refuses backends on its listening ports there (a loop), and keeps the address for other ports', async () => {
    const dev = await makeApp(undefined, { backendPolicy: { defaultNetworks: ['127.0.0.0/8'], deny: [] } });
    try {
      await insertNode(dev.app, { id: newId('node'), kind: 'l4', address: '127.0.0.1' });
      const shop = await newTenant(dev.app, 'dev');
      const lb = await call(dev.app, shop.token, 'POST', '/v1/load-balancers', { name: 'web' });
      const groups = `/v1/load-balancers/${lb.body.id}/server-groups`;
      const ok = await call(dev.app, shop.token, 'POST', groups, {
        name: 'a',
        servers: [{ address: '127.0.0.1', port: 9001 }],
      });
      expect(ok.status).toBe(201);
      const lsn = await call(dev.app, shop.token, 'POST', `/v1/load-balancers/${lb.body.id}/listeners`, {
        protocol: 'tcp',
        port: 7100,
        serverGroupId: ok.body.id,
      });
      expect(lsn.status).toBe(201);
      for (const [address, port] of [
        ['127.0.0.1', 7100],
        ['::ffff:127.0.0.1', 7100],
        ['127.0.0.1', 20000],
        ['127.0.0.1', 39999],
      ] as const) {
        const res = await call(dev.app, shop.token, 'POST', groups, { name: 'loop', servers: [{ address, port }] });
        expect(res.status, `${address}:${port}`).toBe(422);
        expect(res.body.code).toBe('backend_address_denied');
      }
      expect(
        (
          await call(dev.app, shop.token, 'POST', groups, {
            name: 'b',
            servers: [{ address: '127.0.0.1', port: 40000 }],
          })
        ).status,
      ).toBe(201);
    } finally {
      await dev.close();
    }
  });
});
