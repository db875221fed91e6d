import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '@slb/db';
import { copySqliteToPg } from '@slb/db/pg';
import {
  createTestPgDatabase,
  pgReachable,
  readEveryTable,
  readJsonText,
  type TestPgDatabase,
  withPgDb,
} from '@slb/test-support/pg-database';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type Call, call, makeApp, makeCertificate, newLoadBalancer, newTenant } from './helpers.js';

// Issue 23's move up: a database the real API filled (tenants, tokens, LBs, listeners, groups, certificates,
// rules, ACLs, events, nodes, quotas, VIP holds, idempotency keys) copied into PostgreSQL by `npm run db:copy`'s
// function, then every row of every table read back from both and compared.

const reachable = await pgReachable('apps/api/test/pg-copy.test.ts');
let dir: string;
let dbPath: string;
let target: TestPgDatabase | undefined;

function created(res: Call): Call {
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  return res;
}

/** What an installation of some age holds, made through the API's routes. */
async function populate(app: FastifyInstance): Promise<void> {
  const { tenantId, token } = await newTenant(app, 'acme');
  await newTenant(app, 'globex');
  const { lbId, sgId } = await newLoadBalancer(app, token);
  const base = `/v1/load-balancers/${lbId}`;
  created(await call(app, token, 'PATCH', base, { tags: { zeta: '1', alpha: '2' }, deletionProtection: true }));
  const cert = created(
    await call(app, token, 'POST', '/v1/certificates', { name: 'site', ...makeCertificate('a.test') }),
  );
  const acl = created(
    await call(app, token, 'POST', '/v1/acls', { name: 'office', entries: [{ cidr: '10.0.0.0/8' }] }),
  );
  created(await call(app, token, 'POST', `${base}/listeners`, { protocol: 'tcp', port: 80, serverGroupId: sgId }));
  const https = created(
    await call(app, token, 'POST', `${base}/listeners`, {
      protocol: 'https',
      port: 443,
      serverGroupId: sgId,
      certificateId: cert.body.id,
      acl: { aclId: acl.body.id, mode: 'allow' },
      stickySession: { mode: 'insert', cookieTimeout: 600 },
    }),
  );
  created(
    await call(app, token, 'POST', `${base}/listeners/${https.body.id}/rules`, { path: '/api', serverGroupId: sgId }),
  );
  created(await call(app, token, 'POST', `${base}/listeners/${https.body.id}/stop`));
  const idempotent = { 'idempotency-key': 'create-batch-1' };
  const gone = created(await call(app, token, 'POST', '/v1/load-balancers', { name: 'gone' }, idempotent));
  created(await call(app, token, 'DELETE', `/v1/load-balancers/${gone.body.id}`)); // leaves its VIP held
  created(await call(app, ADMIN_TOKEN, 'PATCH', `/v1/tenants/${tenantId}/quotas`, { loadBalancers: 7 }));
  created(
    await call(app, ADMIN_TOKEN, 'PUT', `/v1/tenants/${tenantId}/backend-networks`, { networks: ['10.1.0.0/16'] }),
  );
  created(await call(app, ADMIN_TOKEN, 'POST', '/v1/nodes', { kind: 'l7', address: '127.0.0.21', name: 'l7-node-1' }));
  await app.events.flush();
}

beforeAll(async () => {
  if (!reachable) return;
  dir = mkdtempSync(join(tmpdir(), 'slb-api-pg-'));
  const t = await makeApp(dir, {}, 'sqlite'); // the copy's source is an API's SQLite file
  dbPath = t.dbPath;
  await populate(t.app);
  await t.app.close(); // the copy reads a stopped API's file; t.close() would also delete it
});

afterAll(async () => {
  await target?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!reachable)('copying the API’s SQLite database into PostgreSQL', () => {
  it('keeps every row: ids, token hashes, keys, timestamps, JSON as written', async () => {
    target = await createTestPgDatabase();
    const result = await copySqliteToPg({ from: dbPath, to: target.url });
    const empty = result.counts.filter((c) => c.source === 0).map((c) => c.table);
    // No L4 node connected (nothing placed) and no health check ran.
    expect(empty, 'tables the API left empty here').toEqual(['lb_placements', 'server_health']);

    const store = openDatabase(dbPath);
    try {
      const contents = await withPgDb(target.url, (db) => readEveryTable(store.db, db));
      for (const { table, sqlite, pg } of contents) expect(pg, table).toEqual(sqlite);
      const json = await withPgDb(target.url, (db) => readJsonText(store.db, db));
      for (const { column, sqlite, pg } of json) expect(pg, column).toEqual(sqlite);
    } finally {
      store.close();
    }
  });
});
