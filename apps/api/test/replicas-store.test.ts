import type { Store } from '@slb/db';
import { openPgStore } from '@slb/db/pg';
import { L7_PORT_BASE } from '@slb/model';
import { createTestPgDatabase, pgReachable, type TestPgDatabase } from '@slb/test-support/pg-database';
import { afterEach, describe, expect, it } from 'vitest';
import type { AuthContext } from '../src/services/auth.js';
import { IdempotencyStore } from '../src/services/idempotency.js';
import { servicesOn } from './store-services.js';

// Two API replicas' services on one PostgreSQL (issue 23), writing at the same time: each on its own pool,
// as two processes would be. On SQLite one process owns the file and its writes take turns; here the
// database must keep the replicas from handing out one VIP or L7 port twice, or a tenant's last slot twice.

const reachable = await pgReachable('apps/api/test/replicas-store.test.ts');
let database: TestPgDatabase | undefined;
const stores: Store[] = [];

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  await database?.drop();
  database = undefined;
});

const stamps = { createdAt: '2026-12-05T00:00:00.000Z', updatedAt: '2026-12-05T00:00:00.000Z' };
// Twelve tenants: a tenant's quota-checked creates take turns, other tenants' pick VIPs side by side.
const TENANTS = Array.from({ length: 12 }, (_, i) => `ten-${String(i).padStart(20, '0')}`);

async function twoReplicas() {
  database = await createTestPgDatabase();
  const replicas = [];
  for (let i = 0; i < 2; i++) {
    const store = await openPgStore(database.url, { max: 4 });
    stores.push(store);
    replicas.push(servicesOn(store));
  }
  const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
  await stores[0]!.write((q) =>
    q.insert(stores[0]!.t.tenants).values(TENANTS.map((id) => ({ id, name: id, ...stamps }))),
  );
  await a.addressPools.seed(['198.51.100.0/24']);
  return { a, b };
}

const member = (tenantId: string): AuthContext => ({ tokenId: 'tok-x', tenantId, role: 'member' });

describe.skipIf(!reachable)('two replicas on one PostgreSQL', () => {
  it('give every concurrent create its own VIP', async () => {
    const { a, b } = await twoReplicas();
    const creates = Array.from({ length: 24 }, (_, i) =>
      (i % 2 === 0 ? a : b).loadBalancers.create(member(TENANTS[i % 12]!), { name: `lb-${i}` }),
    );
    const made = await Promise.all(creates);
    const addresses = made.map((lb) => lb.address);
    expect(new Set(addresses).size).toBe(24);
    expect([...addresses].sort((x, y) => Number(x?.split('.')[3]) - Number(y?.split('.')[3]))).toEqual(
      Array.from({ length: 24 }, (_, i) => `198.51.100.${i + 1}`),
    );
    const pools = await a.addressPools.list({});
    expect(pools.items[0]?.allocated).toBe(24);
  });

  it("let only as many concurrent creates through as a tenant's quota has room for", async () => {
    const { a, b } = await twoReplicas();
    await a.quotas.update(TENANTS[0]!, { loadBalancers: 3 });
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        (i % 2 === 0 ? a : b).loadBalancers.create(member(TENANTS[0]!), { name: `q${i}` }),
      ),
    );
    const refused = results.filter((r) => r.status === 'rejected');
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    for (const r of refused) expect((r as PromiseRejectedResult).reason).toMatchObject({ code: 'quota_exceeded' });
    const usage = (await b.quotas.get(TENANTS[0]!)).items.find((i) => i.name === 'loadBalancers');
    expect(usage?.usage).toBe(3);
  });

  it('create once for one Idempotency-Key sent to both at once, and replay it on the other', async () => {
    const { a, b } = await twoReplicas();
    const keysA = new IdempotencyStore(stores[0]!);
    const keysB = new IdempotencyStore(stores[1]!);
    const create = (services: typeof a) => async () => {
      const lb = await services.loadBalancers.create(member(TENANTS[0]!), { name: 'once' });
      return { status: 201, body: { id: lb.id }, headers: {} };
    };
    const [first, second] = await Promise.all([
      keysA.run(TENANTS[0]!, 'key-1', 'POST /v1/load-balancers {"name":"once"}', create(a)),
      keysB.run(TENANTS[0]!, 'key-1', 'POST /v1/load-balancers {"name":"once"}', create(b)),
    ]);
    expect([first.replayed, second.replayed].sort()).toEqual([false, true]);
    expect(second.body).toEqual(first.body);
    expect((await a.loadBalancers.list({ tenantId: TENANTS[0]! }, {})).items).toHaveLength(1);
  });

  it('give every concurrent http listener its own L7 port', async () => {
    const { a, b } = await twoReplicas();
    const lbs: { services: typeof a; tenantId: string; lbId: string; groupId: string }[] = [];
    for (const [i, tenantId] of TENANTS.slice(0, 2).entries()) {
      const services = i === 0 ? a : b;
      const lb = await services.loadBalancers.create(member(tenantId), { name: 'web' });
      const group = await services.serverGroups.create({ tenantId }, lb.id, { name: 'g' });
      lbs.push({ services, tenantId, lbId: lb.id, groupId: group.id });
    }
    const listeners = await Promise.all(
      Array.from({ length: 16 }, (_, i) => {
        const { services, tenantId, lbId, groupId } = lbs[i % 2]!;
        return services.listeners.create({ tenantId }, lbId, {
          protocol: 'http',
          port: 8000 + i,
          serverGroupId: groupId,
        });
      }),
    );
    const ports = listeners.map((l) => l.l7Port ?? -1).sort((x, y) => x - y);
    expect(ports).toEqual(Array.from({ length: 16 }, (_, i) => L7_PORT_BASE + i));
  });
});
