import { operationRequest, type PlanOperation, REF_PREFIX, resolveOperationRefs } from '@slb/model';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN_TOKEN, call, dumpDatabase, makeApp, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

// POST /v1/plans: the operations run through the REST writes' own services, inside one transaction that is
// always rolled back; the answer is what they would do, or the REST write's own error.

let t: TestApp;
let token: string;
beforeAll(async () => {
  t = await makeApp();
  token = (await newTenant(t.app, 'acme')).token;
});
afterAll(() => t.close());

const plan = (operations: unknown[], as = token) => call(t.app, as, 'POST', '/v1/plans', { operations });
const withoutIds = (body: any) => ({
  ...body,
  operations: body.operations.map(({ id: _, ...r }: any) => r),
  listeners: body.listeners.map(({ listenerId: _, loadBalancerId: __, serverGroupId: ___, servers, ...r }: any) => ({
    ...r,
    servers: servers.map(({ serverId: _s, ...s }: any) => s),
  })),
});

/** The state a plan must leave as it found it, through the API (and every row of the database). */
async function snapshot() {
  return {
    lbs: (await call(t.app, token, 'GET', '/v1/load-balancers')).body,
    pools: (await call(t.app, ADMIN_TOKEN, 'GET', '/v1/address-pools')).body,
    quotas: (await call(t.app, token, 'GET', '/v1/quotas')).body,
    rows: await dumpDatabase(t.app),
  };
}

describe('a plan that succeeds', () => {
  const operations = [
    { op: 'createLoadBalancer', ref: 'lb', body: { name: 'shop', address: '127.1.3.7' } },
    {
      op: 'createServerGroup',
      ref: 'web',
      loadBalancerId: 'ref:lb',
      body: { name: 'web', servers: [{ address: '10.0.0.1', port: 8080 }] },
    },
    {
      op: 'addServers',
      loadBalancerId: 'ref:lb',
      serverGroupId: 'ref:web',
      body: { servers: [{ address: '10.0.0.2', port: 8080, weight: 50 }] },
    },
    {
      op: 'createListener',
      ref: 'tcp',
      loadBalancerId: 'ref:lb',
      body: { protocol: 'tcp', port: 443, serverGroupId: 'ref:web', scheduler: 'sch' },
    },
    {
      op: 'createListener',
      ref: 'http',
      loadBalancerId: 'ref:lb',
      body: { protocol: 'http', port: 80, serverGroupId: 'ref:web' },
    },
    {
      op: 'createRule',
      loadBalancerId: 'ref:lb',
      listenerId: 'ref:http',
      body: { path: '/api', serverGroupId: 'ref:web' },
    },
  ];

  it('answers each operation with its status and id, and the listeners it adds', async () => {
    const res = await plan(operations);
    expect(res.status).toBe(200);
    expect(res.body.operations.map((o: any) => [o.index, o.op, o.status])).toEqual([
      [0, 'createLoadBalancer', 201],
      [1, 'createServerGroup', 201],
      [2, 'addServers', 201],
      [3, 'createListener', 201],
      [4, 'createListener', 201],
      [5, 'createRule', 201],
    ]);
    const [lb, sg, added, tcp, http, rule] = res.body.operations.map((o: any) => o.id);
    expect(lb).toMatch(/^lb-/);
    expect(sg).toMatch(/^sg-/);
    expect(added).toBe(sg);
    expect(tcp).toMatch(/^lsn-/);
    expect(http).toMatch(/^lsn-/);
    expect(rule).toMatch(/^rule-/);

    const impacts = res.body.listeners;
    expect(impacts).toHaveLength(2);
    const tcpImpact = impacts.find((l: any) => l.listenerId === tcp);
    expect(tcpImpact).toMatchObject({
      loadBalancerId: lb,
      protocol: 'tcp',
      port: 443,
      serverGroupId: sg,
      change: 'added',
      scheduler: 'sch',
      method: 'maglev',
      movedShare: null,
    });
    expect(
      tcpImpact.servers.map((s: any) => [s.address, s.weightBefore, s.weightAfter, s.takesNewConnections]),
    ).toEqual([
      ['10.0.0.1', null, 100, true],
      ['10.0.0.2', null, 50, true],
    ]);
    expect(tcpImpact.servers[0].shareAfter).toBeCloseTo(2 / 3, 3);
    // HTTP: one row per server group the L7 nodes balance over (the rule names the listener's own group).
    expect(impacts.find((l: any) => l.listenerId === http)).toMatchObject({
      protocol: 'http',
      port: 80,
      serverGroupId: sg,
      change: 'added',
      scheduler: 'wrr',
      method: 'weights',
    });
  });

  it('changes nothing: no LB, VIP, configVersion, quota usage or row; the nodes are not told; the same plan answers the same; the real writes then succeed', async () => {
    const before = await snapshot();
    const changed = vi.spyOn(t.app.controlHub, 'changed');
    const first = await plan(operations);
    const second = await plan(operations);
    expect(changed).not.toHaveBeenCalled();
    expect(await snapshot()).toEqual(before);
    expect(first.status).toBe(200);
    expect(withoutIds(second.body)).toEqual(withoutIds(first.body));

    // Every operation for real, one REST call each: the address, ports and names are all still free.
    const refs = new Map<string, string>();
    for (const op of operations as PlanOperation[]) {
      const req = operationRequest(resolveOperationRefs(op, (label) => refs.get(label)!));
      const res = await call(t.app, token, req.method, req.path, req.body);
      expect(res.status, `${op.op}: ${JSON.stringify(res.body)}`).toBe(201);
      if ('ref' in op && op.ref) refs.set(op.ref, res.body.id);
    }
    expect(changed).toHaveBeenCalled(); // the spy sees what REST writes do
    changed.mockRestore();
    const lb = await call(t.app, token, 'GET', `/v1/load-balancers/${refs.get('lb')}`);
    expect(lb.body.address).toBe('127.1.3.7');
    const allocated = (p: any) => p.items.reduce((n: number, pool: any) => n + pool.allocated, 0);
    expect(allocated((await snapshot()).pools)).toBe(allocated(before.pools) + 1);

    // And now the same plan clashes with what exists, as the REST write would.
    const again = await plan(operations);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('address_in_use');
  });

  it('an operation on something an earlier one changed sees the change; a listener it does not touch is not listed', async () => {
    const { lbId, sgId } = await newLoadBalancer(t.app, token);
    await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
      protocol: 'tcp',
      port: 80,
      serverGroupId: sgId,
    });
    const rename = await plan([
      { op: 'updateServerGroup', loadBalancerId: lbId, serverGroupId: sgId, body: { name: 'renamed' } },
    ]);
    expect(rename.status).toBe(200);
    expect(rename.body.listeners).toEqual([]);
    const res = await plan([
      {
        op: 'createListener',
        ref: 'l',
        loadBalancerId: lbId,
        body: { protocol: 'udp', port: 53, serverGroupId: sgId },
      },
      { op: 'stopListener', loadBalancerId: lbId, listenerId: 'ref:l' },
    ]);
    expect(res.status).toBe(200);
    expect(res.body.listeners).toEqual([]); // created and stopped: never serves
  });
});

describe('a plan that fails answers as the REST write would', () => {
  it('409 port in use at operation 1, with the write’s code and the path under /operations/1; the rename before it is undone', async () => {
    const { lbId, sgId } = await newLoadBalancer(t.app, token);
    const body = { protocol: 'tcp', port: 80, serverGroupId: sgId };
    expect((await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, body)).status).toBe(201);
    const rest = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, body);
    const before = await dumpDatabase(t.app);
    const res = await plan([
      { op: 'updateServerGroup', loadBalancerId: lbId, serverGroupId: sgId, body: { name: 'renamed' } },
      { op: 'createListener', loadBalancerId: lbId, body },
    ]);
    expect(rest.status).toBe(409);
    expect(res.status).toBe(rest.status);
    expect(res.body.code).toBe(rest.body.code);
    expect(res.body.code).toBe('conflict');
    expect(res.body.detail).toBe(`operation 1 (createListener): ${rest.body.detail}`);
    expect(res.body.errors).toEqual(rest.body.errors.map((e: any) => ({ ...e, path: `/operations/1${e.path}` })));
    expect(res.body.errors[0].path).toBe('/operations/1/body/port');
    expect(await dumpDatabase(t.app)).toBe(before);
  });

  it('422 with the field path of the operation’s body; an unknown ref is 422 on its field', async () => {
    const { lbId } = await newLoadBalancer(t.app, token);
    const bad = await plan([
      { op: 'createServerGroup', loadBalancerId: lbId, body: { name: 'x', servers: [] } },
      {
        op: 'createServerGroup',
        loadBalancerId: lbId,
        body: { name: 'y', servers: [{ address: 'not-an-ip', port: 80 }] },
      },
    ]);
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe('unprocessable');
    expect(bad.body.errors.map((e: any) => e.path)).toEqual(['/operations/1/body/servers/0/address']);
    expect(bad.body.detail).toMatch(/^operation 1 \(createServerGroup\): /);

    const unknown = await plan([
      {
        op: 'addServers',
        loadBalancerId: lbId,
        serverGroupId: `${REF_PREFIX}nope`,
        body: { servers: [{ address: '10.0.0.1', port: 80 }] },
      },
    ]);
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors[0].path).toBe('/operations/0/serverGroupId');
  });

  it('a path parameter of the REST write is the operation field that carries it', async () => {
    const tenant = await newTenant(t.app, 'initech');
    const { lbId, sgId, servers } = await newLoadBalancer(t.app, tenant.token);
    // The tenant's networks no longer cover its servers: their next update is refused, on the server id.
    await call(t.app, ADMIN_TOKEN, 'PUT', `/v1/tenants/${tenant.tenantId}/backend-networks`, {
      networks: ['10.9.0.0/16'],
    });
    const srvId = servers[0]!.id;
    const body = { weight: 10 };
    const url = `/v1/load-balancers/${lbId}/server-groups/${sgId}/servers/${srvId}`;
    const rest = await call(t.app, tenant.token, 'PATCH', url, body);
    const res = await plan(
      [{ op: 'updateServer', loadBalancerId: lbId, serverGroupId: sgId, serverId: srvId, body }],
      tenant.token,
    );
    expect(rest.status).toBe(422);
    expect(rest.body.errors[0].path).toBe('/params/srvId');
    expect(res.status).toBe(422);
    expect(res.body.code).toBe(rest.body.code);
    expect(res.body.errors[0].path).toBe('/operations/0/serverId');
  });

  it('412 for a stale ifMatch, 200 with the current ETag', async () => {
    const { lbId } = await newLoadBalancer(t.app, token);
    const etag = (await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}`)).headers.etag as string;
    const update = (ifMatch: string) => [
      { op: 'updateLoadBalancer', loadBalancerId: lbId, body: { name: 'renamed' }, ifMatch },
    ];
    const stale = await plan(update('"r999"'));
    expect(stale.status).toBe(412);
    expect(stale.body.code).toBe('precondition_failed');
    expect(stale.body.detail).toMatch(/^operation 0 \(updateLoadBalancer\): /);
    const current = await plan(update(etag));
    expect(current.status).toBe(200);
    expect(current.body.operations).toEqual([{ index: 0, op: 'updateLoadBalancer', status: 200, id: lbId }]);
  });

  it('400 for an operation of a shape no write has, naming the field of that operation only', async () => {
    const lbId = 'lb-00000000000000000000';
    const cases: [unknown, string, string][] = [
      [{ op: 'createLoadBalancer', body: { name: 'x' }, extra: 1 }, '/body/operations/0/extra', 'unknown field'],
      [
        { op: 'createListener', loadBalancerId: lbId, body: { protocol: 'tcp', port: 'x', serverGroupId: 'sg' } },
        '/body/operations/0/body/port',
        'must be integer',
      ],
      [{ op: 'createWidget', body: {} }, '/body/operations/0/op', 'is not one of the known values'],
      [{ body: {} }, '/body/operations/0/op', 'is required'],
    ];
    for (const [op, path, message] of cases) {
      const res = await plan([op]);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.errors).toEqual([{ path, message }]);
    }
    expect((await plan([])).status).toBe(400);
  });
});
