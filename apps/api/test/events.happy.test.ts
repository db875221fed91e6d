import { sql } from 'drizzle-orm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, makeApp, newLoadBalancer, newTenant, storedRows, type TestApp } from './helpers.js';

// GET /v1/load-balancers/{lbId}/events: the `api` events successful writes leave, newest first.

let t: TestApp;
beforeEach(async () => {
  t = await makeApp();
});
afterEach(async () => {
  await t.close();
});

const eventsOf = async (token: string, lbId: string, query = '') =>
  call(t.app, token, 'GET', `/v1/load-balancers/${lbId}/events${query}`);

describe('api events', () => {
  it('records who made each successful write and what it was, newest first, never the token', async () => {
    const { tenantId, token } = await newTenant(t.app);
    const { lbId, sgId, servers } = await newLoadBalancer(t.app, token);
    const lsn = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
      protocol: 'tcp',
      port: 80,
      serverGroupId: sgId,
    });
    expect(lsn.status).toBe(201);
    expect((await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners/${lsn.body.id}/stop`)).status).toBe(
      200,
    );
    const srv = servers[0]!.id;
    const patched = await call(
      t.app,
      token,
      'PATCH',
      `/v1/load-balancers/${lbId}/server-groups/${sgId}/servers/${srv}`,
      {
        weight: 0,
      },
    );
    expect(patched.status).toBe(200);
    // The admin's write is recorded as the admin's.
    expect(
      (await call(t.app, ADMIN_TOKEN, 'PATCH', `/v1/load-balancers/${lbId}`, { tags: { env: 'prod' } })).status,
    ).toBe(200);
    expect(
      (await call(t.app, token, 'DELETE', `/v1/load-balancers/${lbId}/server-groups/${sgId}/servers/${servers[1]!.id}`))
        .status,
    ).toBe(204);

    const page = await eventsOf(token, lbId);
    expect(page.status).toBe(200);
    const items = page.body.items as any[];
    expect(items.map((e) => e.operation)).toEqual([
      'deleteServer',
      'updateLoadBalancer',
      'updateServer',
      'stopListener',
      'createListener',
      'createServerGroup',
      'createLoadBalancer',
    ]);
    expect(items.every((e) => e.kind === 'api' && e.loadBalancerId === lbId)).toBe(true);
    const byOp = Object.fromEntries(items.map((e) => [e.operation, e]));
    expect(byOp.stopListener.summary).toBe('listener tcp:80 stopped');
    expect(byOp.stopListener.resourceId).toBe(lsn.body.id);
    expect(byOp.updateServer.summary).toBe('server 127.0.0.1:9001 weight 100 → 0');
    expect(byOp.updateServer.detail.weight).toEqual({ from: 100, to: 0 });
    expect(byOp.deleteServer.summary).toBe('server 127.0.0.2:9002 removed');
    expect(byOp.deleteServer.resourceId).toBe(servers[1]!.id);
    expect(byOp.createLoadBalancer.resourceId).toBe(lbId);
    expect(byOp.createLoadBalancer.summary).toMatch(/^load balancer "web" created/);
    expect(byOp.updateLoadBalancer.summary).toBe('load balancer updated: tags');
    const member = byOp.stopListener.actor;
    expect(member).toMatchObject({ tenantId, role: 'member' });
    expect(member.tokenId).toMatch(/^tok-/);
    expect(byOp.updateLoadBalancer.actor.role).toBe('admin');
    expect(byOp.updateLoadBalancer.actor.tenantId).not.toBe(tenantId);
    for (const e of items) {
      expect(e.id).toMatch(/^evt-[0-9a-z]{20}$/);
      expect(Number.isNaN(Date.parse(e.at))).toBe(false);
    }
    // No token in any event, neither the member's nor the admin's.
    const text = JSON.stringify(items);
    expect(text).not.toContain(token);
    expect(text).not.toContain(ADMIN_TOKEN);
    expect(page.body.nextCursor).toBeNull();
  });

  it('records nothing for reads, failed writes, replayed creates and dry runs', async () => {
    const { token } = await newTenant(t.app);
    const lb = await call(t.app, token, 'POST', '/v1/load-balancers', { name: 'web' }, { 'idempotency-key': 'k1' });
    const lbId = lb.body.id as string;
    const before = (await eventsOf(token, lbId)).body.items;
    expect(before).toHaveLength(1);
    await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}`);
    await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}/listeners`);
    // A replay of the create, and writes that fail: 404, 422, 412.
    expect(
      (await call(t.app, token, 'POST', '/v1/load-balancers', { name: 'web' }, { 'idempotency-key': 'k1' })).headers[
        'idempotent-replayed'
      ],
    ).toBe('true');
    expect((await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners/lsn-nope/stop`)).status).toBe(404);
    expect(
      (await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, { protocol: 'tcp', port: 0 })).status,
    ).toBe(400);
    expect(
      (await call(t.app, token, 'PATCH', `/v1/load-balancers/${lbId}`, { name: 'x' }, { 'if-match': '"r99"' })).status,
    ).toBe(412);
    const plan = await call(t.app, token, 'POST', '/v1/plans', {
      operations: [{ op: 'updateLoadBalancer', loadBalancerId: lbId, body: { name: 'planned' } }],
    });
    expect(plan.status).toBe(200);
    const after = (await eventsOf(token, lbId)).body.items;
    expect(after).toEqual(before);
  });

  it('pages newest first across pages and filters by kind', async () => {
    const { token } = await newTenant(t.app);
    const { lbId } = await newLoadBalancer(t.app, token);
    for (let i = 0; i < 5; i++) {
      await call(t.app, token, 'PATCH', `/v1/load-balancers/${lbId}`, { name: `web-${i}` });
    }
    // 7 events: create, group, 5 renames.
    const seen: any[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: any = await eventsOf(token, lbId, `?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeLessThanOrEqual(3);
      seen.push(...res.body.items);
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor !== null);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(7);
    const ids = seen.map((e) => e.id);
    expect([...ids].sort().reverse()).toEqual(ids);
    expect(new Set(ids).size).toBe(7);
    expect(seen[0].operation).toBe('updateLoadBalancer');
    expect(seen.at(-1).operation).toBe('createLoadBalancer');

    expect((await eventsOf(token, lbId, '?kind=api')).body.items).toHaveLength(7);
    expect((await eventsOf(token, lbId, '?kind=health')).body.items).toEqual([]);
    expect((await eventsOf(token, lbId, '?kind=weather')).status).toBe(400);
    const bad = await eventsOf(token, lbId, '?cursor=not-a-cursor');
    expect(bad.status).toBe(400);
    expect(bad.headers['content-type']).toMatch(/^application\/problem\+json/);
  });
});

describe('events and tenancy', () => {
  it("answers 404 for another tenant's load balancer, and shows an admin any tenant's", async () => {
    const a = await newTenant(t.app, 'a');
    const b = await newTenant(t.app, 'b');
    const { lbId } = await newLoadBalancer(t.app, a.token);
    const other = await eventsOf(b.token, lbId);
    expect(other.status).toBe(404);
    expect(other.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect((await eventsOf(a.token, 'lb-00000000000000000000')).status).toBe(404);
    expect((await eventsOf(ADMIN_TOKEN, lbId)).body.items).toHaveLength(2);
    expect((await call(t.app, null, 'GET', `/v1/load-balancers/${lbId}/events`)).status).toBe(401);
    // B's failed write on A's LB leaves nothing there.
    expect((await call(t.app, b.token, 'PATCH', `/v1/load-balancers/${lbId}`, { name: 'mine' })).status).toBe(404);
    expect((await eventsOf(a.token, lbId)).body.items).toHaveLength(2);
  });

  it("goes with its load balancer: a deleted LB's events are gone and its route is 404", async () => {
    const { token } = await newTenant(t.app);
    const { lbId } = await newLoadBalancer(t.app, token);
    const kept = await newLoadBalancer(t.app, token);
    expect((await eventsOf(token, lbId)).body.items.length).toBeGreaterThan(0);
    expect((await call(t.app, token, 'DELETE', `/v1/load-balancers/${lbId}`)).status).toBe(204);
    expect((await eventsOf(token, lbId)).status).toBe(404);
    const rows = await storedRows<{ lb: string }>(t.app, sql`SELECT load_balancer_id AS lb FROM lb_events`);
    expect(rows.some((r) => r.lb === lbId)).toBe(false);
    expect(rows.some((r) => r.lb === kept.lbId)).toBe(true);
  });
});
