import dnsPacket from 'dns-packet';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { answer } from '../src/dns/responder.js';
import {
  ADMIN_TOKEN,
  call,
  dumpDatabase,
  makeApp,
  makeCertificate,
  newLoadBalancer,
  newTenant,
  storedRows,
  type TestApp,
} from './helpers.js';

// Every load balancer has its own VIP from the address pools, so listener ports are unique per LB only.

const createLb = (t: TestApp, token: string, body: Record<string, unknown> = {}) =>
  call(t.app, token, 'POST', '/v1/load-balancers', { name: 'web', ...body });

describe('VIPs from the default pool (127.1.0.0/16)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(() => t.close());

  it('two tenants get distinct VIPs and both serve :80 and :443', async () => {
    const vips: string[] = [];
    for (const name of ['alpha', 'beta']) {
      const { token } = await newTenant(t.app, name);
      const { lbId, sgId } = await newLoadBalancer(t.app, token);
      const cert = await call(t.app, token, 'POST', '/v1/certificates', {
        name: 'c',
        ...makeCertificate(`${name}.example`),
      });
      const http = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
        protocol: 'http',
        port: 80,
        serverGroupId: sgId,
      });
      const https = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
        protocol: 'https',
        port: 443,
        serverGroupId: sgId,
        certificateId: cert.body.id,
      });
      expect([http.status, https.status]).toEqual([201, 201]);
      expect(http.body.bindErrors).toEqual([]);
      const lb = await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}`);
      expect(lb.body.address).toMatch(/^127\.1\.\d+\.\d+$/);
      expect(lb.body.addresses).toEqual([lb.body.address]);
      // The DNS name answers with the VIP.
      expect(await t.app.services.loadBalancers.addressesOf(lbId)).toEqual([lb.body.address]);
      vips.push(lb.body.address);
    }
    expect(new Set(vips).size).toBe(2);
  });

  it('concurrent creates never share a VIP', async () => {
    const { token } = await newTenant(t.app, 'burst');
    const created = await Promise.all(Array.from({ length: 20 }, () => createLb(t, token)));
    expect(created.every((r) => r.status === 201)).toBe(true);
    expect(new Set(created.map((r) => r.body.address)).size).toBe(20);
  });

  it('DNS: A for an IPv4 VIP', async () => {
    const { token } = await newTenant(t.app, 'dns');
    const lb = await createLb(t, token);
    const query = dnsPacket.decode(
      dnsPacket.encode({ type: 'query', id: 1, questions: [{ type: 'A', name: `${lb.body.id}.slb.internal` }] }),
    );
    const reply = await answer(query, 'slb.internal', (id) => t.app.services.loadBalancers.addressesOf(id));
    expect(reply.answers?.map((a) => [a.type, (a as { data: string }).data])).toEqual([['A', lb.body.address]]);
  });

  it('a specific address: granted when free, 409 address_in_use when taken, 422 outside every pool', async () => {
    const { token } = await newTenant(t.app, 'specific');
    const other = await newTenant(t.app, 'other');
    const granted = await createLb(t, token, { address: '127.1.0.200' });
    expect(granted.status).toBe(201);
    expect(granted.body.address).toBe('127.1.0.200');
    // Any spelling of the same address is the same address.
    const before = await dumpDatabase(t.app);
    for (const address of ['127.1.0.200', '::ffff:127.1.0.200']) {
      const taken = await createLb(t, other.token, { address });
      expect(taken.status).toBe(409);
      expect(taken.headers['content-type']).toContain('application/problem+json');
      expect(taken.body.code).toBe('address_in_use');
    }
    for (const address of ['10.0.0.1', '127.1.0.0', '127.1.255.255', 'not-an-ip', 'fe80::1%eth0']) {
      const refused = await createLb(t, token, { address });
      expect(refused.status, address).toBe(422);
      expect(refused.body.errors?.[0]?.path).toBe('/body/address');
    }
    expect(await dumpDatabase(t.app)).toBe(before);
  });
});

describe('a full pool', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp(undefined, { addressPools: ['10.9.0.0/30'] });
  });
  afterAll(() => t.close());

  it('a /30 gives two VIPs, then 409 address_pool_exhausted naming the pool, creating nothing', async () => {
    const { token } = await newTenant(t.app);
    const a = await createLb(t, token);
    const b = await createLb(t, token);
    expect([a.body.address, b.body.address]).toEqual(['10.9.0.1', '10.9.0.2']);
    const before = await dumpDatabase(t.app);
    const full = await createLb(t, token);
    expect(full.status).toBe(409);
    expect(full.body.code).toBe('address_pool_exhausted');
    expect(full.body.detail).toContain(a.body.addressPoolId);
    expect(full.body.detail).toContain('10.9.0.0/30');
    expect(await dumpDatabase(t.app)).toBe(before);
  });
});

describe('no pool at all (SLB_ADDRESS_POOLS set but empty)', () => {
  it('nothing is seeded and a create is 409 address_pool_exhausted', async () => {
    const t = await makeApp(undefined, { addressPools: [] });
    try {
      const pools = await call(t.app, ADMIN_TOKEN, 'GET', '/v1/address-pools');
      expect(pools.body.items).toEqual([]);
      const { token } = await newTenant(t.app);
      const lb = await createLb(t, token);
      expect(lb.status).toBe(409);
      expect(lb.body.code).toBe('address_pool_exhausted');
    } finally {
      await t.close();
    }
  });
});

describe('hold-down after delete', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp(undefined, { addressPools: ['10.9.0.0/29'], vipHoldSeconds: 1 });
  });
  afterAll(() => t.close());

  it("a deleted LB's VIP goes to no other tenant until the hold ends; its own tenant may take it back", async () => {
    const a = await newTenant(t.app, 'a');
    const b = await newTenant(t.app, 'b');
    const first = await createLb(t, a.token);
    expect(first.body.address).toBe('10.9.0.1');
    expect((await call(t.app, a.token, 'DELETE', `/v1/load-balancers/${first.body.id}`)).status).toBe(204);

    expect((await createLb(t, b.token)).body.address).toBe('10.9.0.2');
    const refused = await createLb(t, b.token, { address: '10.9.0.1' });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('address_in_use');
    const back = await createLb(t, a.token, { address: '10.9.0.1' });
    expect(back.status).toBe(201);
    expect(back.body.address).toBe('10.9.0.1');
    expect((await call(t.app, a.token, 'DELETE', `/v1/load-balancers/${back.body.id}`)).status).toBe(204);

    const pool = await call(t.app, ADMIN_TOKEN, 'GET', `/v1/address-pools/${first.body.addressPoolId}`);
    expect(pool.body).toMatchObject({ cidr: '10.9.0.0/29', capacity: 6, allocated: 1, held: 1 });
    expect((await createLb(t, b.token)).body.address).toBe('10.9.0.3');

    // The hold ends by the clock (holdUntil from Date.now()): move the clock past it rather than wait.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 1100);
      expect((await createLb(t, b.token)).body.address).toBe('10.9.0.1');
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('the lowest free VIP, from counts and the pool index (issue #22)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp(undefined, { addressPools: ['10.8.0.0/24', '10.8.1.0/30'], vipHoldSeconds: 0 });
  });
  afterAll(() => t.close());

  /** address → address_offset, as stored. */
  const offsets = async () =>
    Object.fromEntries(
      (
        await storedRows<{ address: string; o: number }>(
          t.app,
          sql`SELECT address, address_offset AS o FROM load_balancers`,
        )
      ).map((r) => [r.address, Number(r.o)]),
    );
  const addresses = async (token: string, n: number) => {
    const got: string[] = [];
    for (let i = 0; i < n; i++) got.push((await createLb(t, token)).body.address);
    return got;
  };

  it('fills the gaps deletes leave, lowest first, then goes on above the highest', async () => {
    const { token } = await newTenant(t.app);
    const lbs = [];
    for (let i = 0; i < 6; i++) lbs.push((await createLb(t, token)).body);
    expect(lbs.map((lb) => lb.address)).toEqual([
      '10.8.0.1',
      '10.8.0.2',
      '10.8.0.3',
      '10.8.0.4',
      '10.8.0.5',
      '10.8.0.6',
    ]);
    for (const i of [3, 1]) {
      expect((await call(t.app, token, 'DELETE', `/v1/load-balancers/${lbs[i].id}`)).status).toBe(204);
    }
    expect(await addresses(token, 3)).toEqual(['10.8.0.2', '10.8.0.4', '10.8.0.7']);
    // Each VIP's place in its pool is stored with it: what the allocator counts and orders.
    expect(await offsets()).toMatchObject({ '10.8.0.1': 0, '10.8.0.2': 1, '10.8.0.7': 6 });
  });

  it('an address asked for by name above the others leaves a gap that later creates fill', async () => {
    const { token } = await newTenant(t.app);
    const named = await createLb(t, token, { address: '10.8.0.200' });
    expect(named.status).toBe(201);
    expect((await offsets())['10.8.0.200']).toBe(199);
    expect(await addresses(token, 2)).toEqual(['10.8.0.8', '10.8.0.9']);
  });

  it('skips a held address, and moves to the next pool when one is full', async () => {
    const { tenantId, token } = await newTenant(t.app);
    await call(t.app, ADMIN_TOKEN, 'PATCH', `/v1/tenants/${tenantId}/quotas`, { loadBalancers: 300 });
    const pools = (await call(t.app, ADMIN_TOKEN, 'GET', '/v1/address-pools')).body.items;
    const [first, second] = pools.map((p: { id: string }) => p.id);
    // A hold within the taken run: 10.8.0.10 is the lowest free address but held, until far in the future.
    const { t: tables } = t.app.data;
    await t.app.data.write((q) =>
      q.insert(tables.addressHolds).values({
        address: '10.8.0.10',
        poolId: first,
        tenantId: 'tnt-someone-else',
        holdUntil: '2999-01-01T00:00:00.000Z',
      }),
    );
    expect(await addresses(token, 2)).toEqual(['10.8.0.11', '10.8.0.12']);
    // Fill the rest of the /24 (offsets up to 253, 10.8.0.200 and the hold taken) and spill into the /30.
    const left = 254 - Object.keys(await offsets()).length - 1;
    const filled = await addresses(token, left);
    expect(filled.at(-1)).toBe('10.8.0.254');
    expect(new Set(filled).size).toBe(left);
    const spilled = await createLb(t, token);
    expect(spilled.body).toMatchObject({ address: '10.8.1.1', addressPoolId: second });
    const pool = await call(t.app, ADMIN_TOKEN, 'GET', `/v1/address-pools/${first}`);
    expect(pool.body).toMatchObject({ capacity: 254, allocated: 253, held: 1 });
  });
});

describe('address pools (admin)', () => {
  let t: TestApp;
  let member: string;
  beforeAll(async () => {
    t = await makeApp();
    member = (await newTenant(t.app)).token;
  });
  afterAll(() => t.close());

  it('are for admins only', async () => {
    expect((await call(t.app, member, 'GET', '/v1/address-pools')).status).toBe(403);
    expect((await call(t.app, member, 'POST', '/v1/address-pools', { cidr: '10.30.0.0/24' })).status).toBe(403);
    expect((await call(t.app, null, 'GET', '/v1/address-pools')).status).toBe(401);
  });

  it('lists the seeded pool with its usage', async () => {
    const list = await call(t.app, ADMIN_TOKEN, 'GET', '/v1/address-pools');
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(1);
    expect(list.body.items[0]).toMatchObject({ cidr: '127.1.0.0/16', capacity: 65534, allocated: 0, held: 0 });
    expect(list.body.items[0].id).toMatch(/^pool-[0-9a-z]{20}$/);
  });

  it.each([
    ['10.30.0.1/24', 'host bits'],
    ['10.30.0.0/33', 'prefix'],
    ['nope', 'ADDRESS/PREFIX'],
  ])('refuses %s with 422 naming /body/cidr', async (cidr) => {
    const res = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/address-pools', { cidr });
    expect(res.status).toBe(422);
    expect(res.body.errors[0].path).toBe('/body/cidr');
  });

  it('creates, refuses overlaps, and deletes only when no LB holds an address from it', async () => {
    const pool = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/address-pools', {
      cidr: '10.30.0.0/24',
      description: 'rack 3',
    });
    expect(pool.status).toBe(201);
    expect(pool.body).toMatchObject({ cidr: '10.30.0.0/24', description: 'rack 3', capacity: 254, allocated: 0 });
    for (const cidr of ['10.30.0.128/25', '10.0.0.0/8', '127.0.0.0/8']) {
      const overlap = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/address-pools', { cidr });
      expect(overlap.status, cidr).toBe(409);
      expect(overlap.body.code).toBe('address_pool_overlap');
    }
    expect((await call(t.app, ADMIN_TOKEN, 'GET', `/v1/address-pools/${pool.body.id}`)).body.id).toBe(pool.body.id);
    expect((await call(t.app, ADMIN_TOKEN, 'GET', '/v1/address-pools/pool-nope')).status).toBe(404);

    const lb = await createLb(t, member, { address: '10.30.0.5' });
    expect(lb.body.addressPoolId).toBe(pool.body.id);
    expect((await call(t.app, ADMIN_TOKEN, 'GET', `/v1/address-pools/${pool.body.id}`)).body.allocated).toBe(1);
    const busy = await call(t.app, ADMIN_TOKEN, 'DELETE', `/v1/address-pools/${pool.body.id}`);
    expect(busy.status).toBe(409);
    expect(busy.body.code).toBe('address_pool_in_use');
    // A held address (the LB is gone) does not keep the pool.
    await call(t.app, member, 'DELETE', `/v1/load-balancers/${lb.body.id}`);
    expect((await call(t.app, ADMIN_TOKEN, 'GET', `/v1/address-pools/${pool.body.id}`)).body.held).toBe(1);
    expect((await call(t.app, ADMIN_TOKEN, 'DELETE', `/v1/address-pools/${pool.body.id}`)).status).toBe(204);
    expect((await call(t.app, ADMIN_TOKEN, 'GET', `/v1/address-pools/${pool.body.id}`)).status).toBe(404);
  });

  it('IPv6: capacity capped at 2^32, a VIP answered with AAAA', async () => {
    const pool = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/address-pools', { cidr: '2001:DB8:0::/64' });
    expect(pool.status).toBe(201);
    expect(pool.body).toMatchObject({ cidr: '2001:db8::/64', capacity: 2 ** 32 });
    const lb = await createLb(t, member, { address: '2001:db8:0:0::10' });
    expect(lb.status).toBe(201);
    expect(lb.body.address).toBe('2001:db8::10');
    const query = dnsPacket.decode(
      dnsPacket.encode({ type: 'query', id: 1, questions: [{ type: 'AAAA', name: `${lb.body.id}.slb.internal` }] }),
    );
    const reply = await answer(query, 'slb.internal', (id) => t.app.services.loadBalancers.addressesOf(id));
    expect(reply.answers?.map((a) => [a.type, (a as { data: string }).data])).toEqual([['AAAA', '2001:db8::10']]);
  });
});
