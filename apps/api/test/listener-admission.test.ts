import { MAX_LISTENERS_PER_NODE, QUOTAS } from '@slb/model';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, makeApp, newLoadBalancer, newTenant, SQLITE_ONLY, type TestApp } from './helpers.js';

// A node refuses a config of more than MAX_LISTENERS_PER_NODE listeners as a whole (which would hold back
// every other LB's changes on it), so the API stops at that many fleet-wide, with a 409 that changes nothing.

let t: TestApp;
afterAll(() => t.close());
beforeAll(async () => {
  t = await makeApp();
});

// Both fill the fleet with SQLite's SQL (10,000 API calls would take a while).
it.skipIf(SQLITE_ONLY)(
  `refuses the listener after the fleet's ${MAX_LISTENERS_PER_NODE}th, and takes one again once another is deleted`,
  async () => {
    const { tenantId, token } = await newTenant(t.app);
    // The fleet bound is what is tested, not the tenant's quota: raised to its ceiling, the node bound.
    const quota = await call(t.app, ADMIN_TOKEN, 'PATCH', `/v1/tenants/${tenantId}/quotas`, {
      listenersPerLoadBalancer: MAX_LISTENERS_PER_NODE,
      listeners: MAX_LISTENERS_PER_NODE,
      backends: QUOTAS.backends.ceiling,
    });
    expect(quota.status).toBe(200);
    const { lbId, sgId } = await newLoadBalancer(t.app, token);
    const base = `/v1/load-balancers/${lbId}/listeners`;
    const seed = await call(t.app, token, 'POST', base, { protocol: 'tcp', port: 1000, serverGroupId: sgId });
    expect(seed.status).toBe(201);
    // Fill the table to one short of the bound with copies of that listener (10,000 API calls would take a while).
    const sqlite = t.app.store.sqlite;
    const columns = (sqlite.prepare('PRAGMA table_info(listeners)').all() as { name: string }[]).map((c) => c.name);
    const select = columns.map((c) =>
      c === 'id' ? `'lsn-fill' || printf('%012d', n)` : c === 'port' ? 'port + n' : c,
    );
    sqlite
      .prepare(
        `WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?)
       INSERT INTO listeners (${columns.join(', ')}) SELECT ${select.join(', ')} FROM seq, listeners WHERE id = ?`,
      )
      .run(MAX_LISTENERS_PER_NODE - 2, seed.body.id);
    const total = () => (sqlite.prepare('SELECT count(*) AS n FROM listeners').get() as { n: number }).n;
    expect(total()).toBe(MAX_LISTENERS_PER_NODE - 1);

    const last = await call(t.app, token, 'POST', base, { protocol: 'udp', port: 53, serverGroupId: sgId });
    expect(last.status).toBe(201);
    const over = await call(t.app, token, 'POST', base, { protocol: 'udp', port: 54, serverGroupId: sgId });
    expect(over.status).toBe(409);
    expect(over.headers['content-type']).toContain('application/problem+json');
    expect(over.body.detail).toContain(`${MAX_LISTENERS_PER_NODE} listeners`);
    expect(total()).toBe(MAX_LISTENERS_PER_NODE);

    expect((await call(t.app, token, 'DELETE', `${base}/${last.body.id}`)).status).toBe(204);
    expect((await call(t.app, token, 'POST', base, { protocol: 'udp', port: 54, serverGroupId: sgId })).status).toBe(
      201,
    );
  },
);

it.skipIf(SQLITE_ONLY)(
  "reads the fleet's listener count from the row usage_counts keeps, not by counting the fleet",
  async () => {
    // Its own app: the test above leaves the fleet full.
    const fresh = await makeApp();
    try {
      const { token } = await newTenant(fresh.app);
      const { lbId, sgId } = await newLoadBalancer(fresh.app, token);
      const create = (port: number) =>
        call(fresh.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
          protocol: 'tcp',
          port,
          serverGroupId: sgId,
        });
      expect((await create(1999)).status).toBe(201);
      const sqlite = fresh.app.store.sqlite;
      const kept = () =>
        (
          sqlite.prepare("SELECT used FROM usage_counts WHERE scope = '*' AND name = 'listeners'").get() as {
            used: number;
          }
        ).used;
      const setKept = (n: number) =>
        sqlite.prepare("UPDATE usage_counts SET used = ? WHERE scope = '*' AND name = 'listeners'").run(n);
      const before = kept();
      setKept(MAX_LISTENERS_PER_NODE);
      expect((await create(2000)).status).toBe(409);
      setKept(before);
      expect((await create(2000)).status).toBe(201);
      expect(kept()).toBe(before + 1);
    } finally {
      await fresh.close();
    }
  },
);
