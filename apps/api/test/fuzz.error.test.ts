import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, dumpDatabase, makeApp, makeCertificate, newLoadBalancer, type TestApp } from './helpers.js';

interface Operation {
  method: 'POST' | 'PATCH';
  path: string;
  operationId: string;
}

const document = JSON.parse(readFileSync(new URL('../../../openapi/openapi.json', import.meta.url), 'utf8'));
/** Every write route with a body, read from the OpenAPI document so a new route is fuzzed without editing this file. */
const writeOperations: Operation[] = Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(
  ([path, ops]) =>
    (['post', 'patch'] as const)
      .filter((m) => ops[m]?.requestBody)
      .map((m) => ({ method: m.toUpperCase() as 'POST' | 'PATCH', path, operationId: ops[m].operationId as string })),
);

let t: TestApp;
const ids: Record<string, string> = {};
const valid: Record<string, Record<string, unknown>> = {};

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
  const acl = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/acls', { name: 'a' });
  const tenant = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/tenants', { name: 't' });
  Object.assign(ids, {
    lbId,
    sgId,
    srvId: servers[0]!.id,
    lsnId: lsn.body.id,
    ruleId: rule.body.id,
    aclId: acl.body.id,
    tenantId: tenant.body.id,
    nodeId: 'node-00000000000000000000',
  });
  const cert = makeCertificate('fuzz.example');
  Object.assign(valid, {
    createLoadBalancer: { name: 'x' },
    updateLoadBalancer: { name: 'x' },
    createServerGroup: { name: 'x' },
    updateServerGroup: { name: 'x' },
    addServers: { servers: [{ address: '127.0.0.77', port: 7 }] },
    updateServer: { weight: 1 },
    createListener: { protocol: 'tcp', port: 1000, serverGroupId: sgId },
    updateListener: { idleTimeout: 5 },
    createRule: { path: '/x', serverGroupId: sgId },
    updateRule: { priority: 5 },
    createCertificate: { name: 'x', ...cert },
    createAcl: { name: 'x' },
    updateAcl: { name: 'x' },
    updateNode: { drain: true },
    createTenant: { name: 'x' },
    createToken: { name: 'x' },
  });
});
afterAll(() => t.close());

const fillPath = (path: string) => path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? name);

const wrongForString = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.object({ maxDepth: 1 }),
);
const wrongForNumber = fc.oneof(
  fc.string(),
  fc.double({ noInteger: true, noNaN: true }),
  fc.integer({ min: 100_001 }),
  fc.integer({ max: -1 }),
  fc.constant(null),
  fc.boolean(),
);
const wrongForBoolean = fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.constant('true'));
const wrongForArray = fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.object({ maxDepth: 1 }));
const hugeString = fc.string({ minLength: 300, maxLength: 600, unit: 'grapheme' }).map((s) => s.repeat(300));
const deepJson = fc
  .integer({ min: 50, max: 2000 })
  .map((depth) => JSON.parse(`${'['.repeat(depth)}1${']'.repeat(depth)}`));

function wrongValueFor(value: unknown) {
  if (typeof value === 'string') return fc.oneof(wrongForString, deepJson);
  if (typeof value === 'number') return fc.oneof(wrongForNumber, deepJson);
  if (typeof value === 'boolean') return wrongForBoolean;
  if (Array.isArray(value)) return wrongForArray;
  return fc.oneof(fc.string(), fc.integer(), fc.constant(null));
}

/** Bodies that no schema accepts: each generator breaks the body in a way validation must catch. */
function malformedBodies(op: Operation): fc.Arbitrary<string> {
  const base = valid[op.operationId];
  if (!base) throw new Error(`no valid sample body for ${op.operationId}: add one to the fuzz test`);
  const keys = Object.keys(base);
  const notAnObject = fc.oneof(
    fc.integer(),
    fc.string(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.jsonValue(), { maxLength: 4 }),
    deepJson,
  );
  const unknownField = fc
    .tuple(fc.string({ minLength: 1, maxLength: 30 }), fc.jsonValue({ maxDepth: 3 }))
    .filter(
      ([k]) =>
        ![
          'name',
          'weight',
          'priority',
          'drain',
          'servers',
          'protocol',
          'port',
          'serverGroupId',
          'idleTimeout',
          'path',
          'certificate',
          'privateKey',
          'role',
          'description',
          'domain',
        ].includes(k) && k !== '__proto__',
    )
    .map(([k, v]) => ({ ...base, [`x-${k}`]: v }));
  const wrongType = fc
    .constantFrom(...keys)
    .chain((key) => wrongValueFor(base[key]).map((bad) => ({ ...base, [key]: bad })));
  const stringKeys = keys.filter((k) => typeof base[k] === 'string' && k !== 'certificate' && k !== 'privateKey');
  const broken = fc.oneof(
    fc.string().map((s) => `{"${s}`),
    fc.constant('{"name": "x",}'),
    fc.constant('{"name": NaN}'),
  );
  const arbs = [
    notAnObject.map((v) => JSON.stringify(v)),
    unknownField.map((v) => JSON.stringify(v)),
    wrongType.map((v) => JSON.stringify(v)),
    broken,
  ];
  if (stringKeys.length > 0) {
    const huge = fc.constantFrom(...stringKeys).chain((key) => hugeString.map((s) => ({ ...base, [key]: s })));
    arbs.push(huge.map((v) => JSON.stringify(v)));
  }
  return fc.oneof(...arbs);
}

describe('fuzzing every write route from the OpenAPI document', () => {
  it('covers every write route', () => {
    expect(writeOperations.length).toBeGreaterThanOrEqual(16);
  });

  it.each(writeOperations.map((op) => [`${op.method} ${op.path}`, op] as const))(
    '%s: hundreds of malformed bodies get only 4xx problem+json and change nothing',
    async (_name, op) => {
      const before = dumpDatabase(t.app);
      const url = fillPath(op.path);
      await fc.assert(
        fc.asyncProperty(malformedBodies(op), async (payload) => {
          const res = await t.app.inject({
            method: op.method,
            url,
            headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
            payload,
          });
          expect(res.statusCode, payload.slice(0, 200)).toBeGreaterThanOrEqual(400);
          expect(res.statusCode, payload.slice(0, 200)).toBeLessThan(500);
          expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        }),
        { numRuns: 150, seed: 42 },
      );
      expect(dumpDatabase(t.app)).toBe(before);
    },
  );
});
