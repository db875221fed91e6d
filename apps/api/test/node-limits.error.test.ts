import { MAX_RULES_PER_LISTENER } from '@slb/model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  call,
  dumpDatabase,
  makeApp,
  newLoadBalancer,
  newTenant,
  SQLITE_ONLY,
  type TestApp,
} from './helpers.js';

// What a node refuses, the API refuses first: a config the API took must never be one a node cannot
// build, or one tenant's write would hold back every tenant's config on that node.

let t: TestApp;
beforeAll(async () => {
  t = await makeApp();
});
afterAll(() => t.close());

describe('ACL entries the nodes cannot parse', () => {
  const zoned = ['fe80::%lo/128', 'fe80::1%1/128', 'fe80::1%eth0'];
  it.each(zoned)('%s is a 422 on create and on update, and changes nothing', async (cidr) => {
    const { token } = await newTenant(t.app, `zone-${cidr}`);
    const acl = await call(t.app, token, 'POST', '/v1/acls', { name: 'ok', entries: [{ cidr: '10.0.0.0/8' }] });
    expect(acl.status).toBe(201);
    const before = await dumpDatabase(t.app);
    const created = await call(t.app, token, 'POST', '/v1/acls', { name: 'zoned', entries: [{ cidr }] });
    expect(created.status).toBe(422);
    expect(created.body.errors[0].path).toBe('/body/entries/0/cidr');
    const updated = await call(t.app, token, 'PATCH', `/v1/acls/${acl.body.id}`, { entries: [{ cidr }] });
    expect(updated.status).toBe(422);
    expect(await dumpDatabase(t.app)).toBe(before);
  });
});

// Filled with SQLite's SQL (a thousand API calls would take a while).
describe.skipIf(SQLITE_ONLY)('rules per listener', () => {
  it(`the ${MAX_RULES_PER_LISTENER + 1}th rule is refused even with the quota at its ceiling`, async () => {
    const { tenantId, token } = await newTenant(t.app, 'rules');
    const raised = await call(t.app, ADMIN_TOKEN, 'PATCH', `/v1/tenants/${tenantId}/quotas`, {
      rulesPerListener: MAX_RULES_PER_LISTENER,
    });
    expect(raised.status).toBe(200);
    const over = await call(t.app, ADMIN_TOKEN, 'PATCH', `/v1/tenants/${tenantId}/quotas`, {
      rulesPerListener: MAX_RULES_PER_LISTENER + 1,
    });
    expect(over.status).toBe(400);

    const { lbId, sgId } = await newLoadBalancer(t.app, token);
    const lsn = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
      protocol: 'http',
      port: 8080,
      serverGroupId: sgId,
    });
    const base = `/v1/load-balancers/${lbId}/listeners/${lsn.body.id}/rules`;
    const seed = await call(t.app, token, 'POST', base, { path: '/seed', serverGroupId: sgId });
    expect(seed.status).toBe(201);
    // Fill to one short of the bound with copies of that rule (a thousand API calls would take a while).
    const sqlite = t.app.store.sqlite;
    const columns = (sqlite.prepare('PRAGMA table_info(rules)').all() as { name: string }[]).map((c) => c.name);
    const select = columns.map((c) =>
      c === 'id' ? `'rule-fill' || printf('%011d', n)` : c === 'path' ? `'/fill' || n` : c,
    );
    sqlite
      .prepare(
        `WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?)
         INSERT INTO rules (${columns.join(', ')}) SELECT ${select.join(', ')} FROM seq, rules WHERE id = ?`,
      )
      .run(MAX_RULES_PER_LISTENER - 2, seed.body.id);

    expect((await call(t.app, token, 'POST', base, { path: '/last', serverGroupId: sgId })).status).toBe(201);
    const before = await dumpDatabase(t.app);
    const refused = await call(t.app, token, 'POST', base, { path: '/one-too-many', serverGroupId: sgId });
    expect(refused.status).toBe(409);
    expect(refused.body.quota).toMatchObject({ name: 'rulesPerListener', limit: MAX_RULES_PER_LISTENER });
    expect(await dumpDatabase(t.app)).toBe(before);
  }, 60_000);
});
