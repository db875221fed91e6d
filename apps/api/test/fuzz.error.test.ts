import { readFileSync } from 'node:fs';
import { newId } from '@slb/db';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FuzzCase, type FuzzCases, fuzzCases } from './fuzz-cases.js';
import {
  ADMIN_TOKEN,
  call,
  dumpDatabase,
  insertNode,
  makeApp,
  makeCertificate,
  newLoadBalancer,
  SQLITE_ONLY,
  type TestApp,
} from './helpers.js';
import { type Hints, type Operation, operationsOf } from './openapi-fuzz.js';

// Every operation of the OpenAPI document is fuzzed in-process: path params, query strings, headers,
// content types and bodies, each valid or broken. However a request is broken, the answer is never 5xx,
// every error is problem+json, a rejected request changes nothing, and the app keeps serving.
// Each case runs inside a transaction rolled back afterwards, so inputs valid by chance (a DELETE with
// a real id) cannot eat the fixtures, and "changed nothing" is checked against one baseline.
// SLB_FUZZ_SEED replays a run; SLB_FUZZ_CASES changes its size (default 10,000).

const SEED = Number(process.env.SLB_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const CASES = Number(process.env.SLB_FUZZ_CASES ?? 10_000);

const document = JSON.parse(readFileSync(new URL('../../../openapi/openapi.json', import.meta.url), 'utf8'));
const operations = operationsOf(document);
let t: TestApp;
let baseline: string;
const ids: Record<string, string> = {};
let hints: Hints;
const tally = { cases: 0, accepted: 0, byStatus: new Map<number, number>() };
let cases: FuzzCases;

beforeAll(async () => {
  t = await makeApp();
  const { lbId, sgId, servers } = await newLoadBalancer(t.app, ADMIN_TOKEN);
  const base = `/v1/load-balancers/${lbId}`;
  const lsn = await call(t.app, ADMIN_TOKEN, 'POST', `${base}/listeners`, {
    protocol: 'http',
    port: 80,
    serverGroupId: sgId,
  });
  const rule = await call(t.app, ADMIN_TOKEN, 'POST', `${base}/listeners/${lsn.body.id}/rules`, {
    path: '/a',
    serverGroupId: sgId,
  });
  const pem = makeCertificate('fuzz.example');
  const otherPem = makeCertificate('other.example');
  const cert = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/certificates', { name: 'c', ...pem });
  const acl = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/acls', { name: 'a', entries: [{ cidr: '10.0.0.0/8' }] });
  const tenant = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/tenants', { name: 't' });
  const token = await call(t.app, ADMIN_TOKEN, 'POST', `/v1/tenants/${tenant.body.id}/tokens`, { role: 'member' });
  // Nodes only appear by saying hello on the control channel; a row is all the REST routes need.
  const nodeId = newId('node');
  await insertNode(t.app, { id: nodeId, kind: 'l4', address: '127.0.0.9' });
  for (const res of [lsn, rule, cert, acl, tenant, token]) expect(res.status).toBe(201);
  const pools = await call(t.app, ADMIN_TOKEN, 'GET', '/v1/address-pools');
  Object.assign(ids, {
    lbId,
    sgId,
    srvId: servers[0]!.id,
    lsnId: lsn.body.id,
    ruleId: rule.body.id,
    certId: cert.body.id,
    aclId: acl.body.id,
    tenantId: tenant.body.id,
    tokenId: token.body.id,
    nodeId,
    poolId: pools.body.items[0].id,
  });
  const corrupt = (text: string) => text.replace(/[A-Za-z0-9+/]{10}\n/, 'AAAAAAAAA!\n');
  hints = {
    ids: Object.values(ids),
    byName: {
      certificate: fc.constantFrom(
        pem.certificate,
        otherPem.certificate,
        pem.certificate + otherPem.certificate,
        pem.certificate.slice(0, 200),
        corrupt(pem.certificate),
        pem.privateKey,
      ),
      privateKey: fc.constantFrom(
        pem.privateKey,
        otherPem.privateKey,
        pem.privateKey.slice(0, 100),
        corrupt(pem.privateKey),
        pem.certificate,
      ),
      address: fc.constantFrom(
        '127.0.0.50',
        '::1',
        '10.1.2.3',
        '256.0.0.1',
        'localhost',
        'fe80::1%lo',
        '::ffff:1.2.3.4',
      ),
      cidr: fc.constantFrom('10.0.0.0/8', '2001:db8::/32', '10.0.0.1/33', '::/0', '1.2.3.4', '::/129', '1.2.3.4/-1'),
    },
  };
  baseline = await dumpDatabase(t.app);
  console.log(`API fuzz: seed ${SEED} (replay with SLB_FUZZ_SEED=${SEED}), ${CASES} cases`);
  cases = fuzzCases(operations, { ids, hints });
});

afterAll(async () => {
  const statuses = [...tally.byStatus].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`);
  console.log(`API fuzz: ${tally.cases} cases, ${tally.accepted} accepted (valid by chance); ${statuses.join(' ')}`);
  await t?.close();
});

const totalChanges = () => t.app.store.sqlite.prepare('SELECT total_changes()').pluck().get() as number;

async function check(op: Operation, c: FuzzCase): Promise<void> {
  const sqlite = t.app.store.sqlite;
  sqlite.exec('BEGIN');
  try {
    const changesBefore = totalChanges();
    const res = await t.app.inject({
      method: c.method,
      url: c.url,
      headers: c.headers,
      ...(c.payload !== undefined ? { payload: c.payload } : {}),
    });
    const status = res.statusCode;
    const label = `${c.method} ${c.url.slice(0, 300)} → ${status} ${res.body.slice(0, 300)}`;
    tally.cases++;
    tally.byStatus.set(status, (tally.byStatus.get(status) ?? 0) + 1);
    expect(status, label).toBeLessThan(500);
    if (status < 400) {
      tally.accepted++;
    } else {
      expect(res.headers['content-type'], label).toMatch(/^application\/problem\+json/);
      const problem = res.json();
      expect(problem.status, label).toBe(status);
      expect(typeof problem.type === 'string' && typeof problem.title === 'string', label).toBe(true);
      expect(typeof problem.detail, label).toBe('string');
      // total_changes is a cheap first look; a write that was rolled back by the app itself still counts there.
      if (totalChanges() !== changesBefore) expect(await dumpDatabase(t.app), label).toBe(baseline);
    }
    if (c.badUrl) expect(status, label).toBe(400);
    else if (c.tooLong) expect(status, label).toBeGreaterThanOrEqual(400);
    else if (c.authBad) expect(status, label).toBe(401);
    else if (c.noRoute && cases.landsOnRoute(c))
      expect(status, label).toBeLessThan(500); // another route's answer
    else if (c.noRoute) expect([400, 404, 405, 413, 415], label).toContain(status);
    else if (c.bodyBroken) expect([400, 413, 415], label).toContain(status);
    else if (c.outsideBodyBroken) expect(status, label).toBeGreaterThanOrEqual(400);
    else if (!c.vague) {
      // Everything the document asks for was given: the answer is one it documents, and no validation error.
      expect(op.responses, label).toContain(status);
      if (status === 400) expect(res.json().code, label).not.toBe('validation_failed');
    }
  } finally {
    sqlite.exec('ROLLBACK');
  }
}

// Each case runs in a transaction on the SQLite connection, rolled back after it.
describe.skipIf(SQLITE_ONLY)('fuzzing every route of the OpenAPI document', () => {
  it('has operations to fuzz, each with the fixtures its path needs', () => {
    expect(operations.length).toBeGreaterThanOrEqual(45);
    for (const op of operations) {
      for (const p of op.parameters.filter((x) => x.in === 'path')) expect(ids[p.name], p.name).toBeDefined();
    }
  });

  const perOperation = Math.ceil(CASES / operations.length);
  it.each(operations.map((op, index) => [`${op.method} ${op.path}`, op, index] as const))(
    '%s: never 5xx, errors are problem+json, rejected requests change nothing',
    async (_name, op, index) => {
      try {
        await fc.assert(
          fc.asyncProperty(cases.caseFor(op), (c) => check(op, c)),
          { numRuns: perOperation, seed: SEED + index },
        );
      } catch (err) {
        const cause = (err as Error).cause as Error | undefined;
        throw new Error(`replay with SLB_FUZZ_SEED=${SEED}: ${(err as Error).message}\n${cause?.message ?? ''}`);
      }
    },
  );

  it('found before, pinned here: tag keys outside their pattern, bad escapes and over-long path parameters', async () => {
    const before = await dumpDatabase(t.app);
    // A tag key the pattern refuses used to skip the value's checks and be stored, then dropped on read.
    for (const tags of [{ '\n': { nested: 1 } }, { '': 'x'.repeat(300) }]) {
      const res = await call(t.app, ADMIN_TOKEN, 'PATCH', `/v1/load-balancers/${ids.lbId}`, { tags });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_failed');
    }
    // The router refused these with its own JSON (and a 414), not problem+json.
    for (const url of [`/v1/load-balancers/%ZZ`, `/v1/load-balancers/${'%C3%B1'.repeat(200)}`]) {
      const res = await t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(res.statusCode, url).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, url).toBeLessThan(500);
      expect(res.headers['content-type'], url).toMatch(/^application\/problem\+json/);
    }
    expect(await dumpDatabase(t.app)).toBe(before);
  });

  it(`ran at least ${CASES} cases, the database is as before, and the app still serves`, async () => {
    expect(tally.cases).toBeGreaterThanOrEqual(CASES);
    // A fuzz that only ever hits validation says little: the fixtures must let real requests through too.
    expect(tally.accepted).toBeGreaterThan(CASES / 50);
    expect(await dumpDatabase(t.app)).toBe(baseline);
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await call(t.app, ADMIN_TOKEN, 'GET', `/v1/load-balancers/${ids.lbId}`)).status).toBe(200);
  });
});
