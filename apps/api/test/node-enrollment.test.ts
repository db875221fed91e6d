import { ENROLL_PATH } from '@slb/model';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { identityOf } from '../src/control/node-credentials.js';
import { connectFake } from './fake-node.js';
import { ADMIN_TOKEN, call, makeApp, newTenant, type TestApp } from './helpers.js';

// Registration, enrollment, rotation and deletion of nodes through the API, in process.

async function enroll(t: TestApp, joinToken: string) {
  const res = await t.app.inject({
    method: 'POST',
    url: ENROLL_PATH,
    headers: { authorization: `Bearer ${joinToken}` },
  });
  return { status: res.statusCode, body: JSON.parse(res.body) };
}

describe('node enrollment', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => t.close());

  it('registers a node under a node- id, shows the join token once, and the token works once', async () => {
    const created = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/nodes', {
      kind: 'l7',
      address: '127.0.0.21',
      name: 'l7-node-1',
      capacityWeight: 50,
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'l7-node-1', kind: 'l7', address: '127.0.0.21', capacityWeight: 50 });
    expect(created.body.id).toMatch(/^node-/);
    expect(created.body.joinToken).toMatch(/^slbj_/);
    const read = await call(t.app, ADMIN_TOKEN, 'GET', `/v1/nodes/${created.body.id}`);
    expect(JSON.stringify(read.body)).not.toContain(created.body.joinToken);

    const first = await enroll(t, created.body.joinToken);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ nodeId: created.body.id, kind: 'l7', address: '127.0.0.21' });
    expect(await identityOf(t.app.data, first.body.credential)).toEqual({
      nodeId: created.body.id,
      kind: 'l7',
      address: '127.0.0.21',
    });
    expect((await enroll(t, created.body.joinToken)).status).toBe(401);
  });

  it('refuses bad registrations with a problem and changes nothing', async () => {
    const { token } = await newTenant(t.app);
    expect((await call(t.app, token, 'POST', '/v1/nodes', { kind: 'l4', address: '127.0.0.11' })).status).toBe(403);
    expect((await call(t.app, ADMIN_TOKEN, 'POST', '/v1/nodes', { kind: 'l4', address: 'nope' })).status).toBe(422);
    expect((await call(t.app, ADMIN_TOKEN, 'POST', '/v1/nodes', { kind: 'l9', address: '127.0.0.11' })).status).toBe(
      400,
    );
    expect(
      (await call(t.app, ADMIN_TOKEN, 'POST', '/v1/nodes', { kind: 'l4', address: '127.0.0.11', capacityWeight: 5000 }))
        .status,
    ).toBe(400);
    expect((await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes')).body.items).toEqual([]);
    expect((await call(t.app, ADMIN_TOKEN, 'POST', '/v1/nodes', { kind: 'l4', address: '127.0.0.11' })).status).toBe(
      201,
    );
    const clash = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/nodes', { kind: 'l4', address: '127.0.0.11' });
    expect(clash.status).toBe(409);
    expect(clash.headers['content-type']).toMatch(/problem\+json/);
    expect((await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes')).body.items).toHaveLength(1);
    expect((await enroll(t, 'slbj_made-up')).status).toBe(401);
  });

  it('rotation: the old credential works until the new join token is used, then never again', async () => {
    const created = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/nodes', { kind: 'l4', address: '127.0.0.12' });
    const old = (await enroll(t, created.body.joinToken)).body.credential as string;
    const rotated = await call(t.app, ADMIN_TOKEN, 'POST', `/v1/nodes/${created.body.id}/credentials`);
    expect(rotated.status).toBe(201);
    expect(rotated.body.nodeId).toBe(created.body.id);
    expect((await identityOf(t.app.data, old))?.nodeId).toBe(created.body.id);
    const fresh = (await enroll(t, rotated.body.joinToken)).body.credential as string;
    expect(await identityOf(t.app.data, old)).toBeNull();
    expect((await identityOf(t.app.data, fresh))?.nodeId).toBe(created.body.id);
    expect((await call(t.app, ADMIN_TOKEN, 'POST', '/v1/nodes/node-unknown/credentials')).status).toBe(404);
  });

  it('the legacy shared token cannot claim a registered node, enrolled or not yet', async () => {
    const created = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/nodes', { kind: 'l4', address: '127.0.0.14' });
    const before = (await call(t.app, ADMIN_TOKEN, 'GET', `/v1/nodes/${created.body.id}`)).body;
    // A session the channel server let in on the shared token (no identity): its hello names the node.
    const claim = await connectFake(t, { nodeId: created.body.id, kind: 'l7', address: '127.0.0.99' });
    expect(claim.sent).toEqual([
      expect.objectContaining({ type: 'error', reason: expect.stringMatching(/own credential/) }),
    ]);
    expect(claim.closed).not.toBeNull();
    expect((await call(t.app, ADMIN_TOKEN, 'GET', `/v1/nodes/${created.body.id}`)).body).toEqual(before);
    t.app.controlHub.close();
  });

  it('deletion removes the row and revokes the credential', async () => {
    const created = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/nodes', { kind: 'l4', address: '127.0.0.13' });
    const credential = (await enroll(t, created.body.joinToken)).body.credential as string;
    expect((await call(t.app, ADMIN_TOKEN, 'DELETE', `/v1/nodes/${created.body.id}`)).status).toBe(204);
    expect(await identityOf(t.app.data, credential)).toBeNull();
    expect((await call(t.app, ADMIN_TOKEN, 'GET', `/v1/nodes/${created.body.id}`)).status).toBe(404);
    expect((await call(t.app, ADMIN_TOKEN, 'DELETE', `/v1/nodes/${created.body.id}`)).status).toBe(404);
  });
});
