import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '@slb/test-support/fleet';
import { createTestPgDatabase, pgReachable, type TestPgDatabase } from '@slb/test-support/pg-database';
import { deleteRedisKeys } from '@slb/test-support/redis-keys';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { buildApp } from '../src/app.js';
import { connectFake, type FakeNode, heldListeners } from './fake-node.js';
import { ADMIN_TOKEN, call, LOCAL_BACKEND_POLICY, makeCertificate, newTenant, type TestApp } from './helpers.js';

// Two API replicas on one PostgreSQL and one Redis (issue 23), as two apps in this process: any replica answers
// any call, and a write on one reaches the nodes connected to the other.

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const reachable = await pgReachable('apps/api/test/replicas-app.test.ts');

let database: TestPgDatabase;
const dir = mkdtempSync(join(tmpdir(), 'slb-replicas-'));
/** One key for both: each opens the private keys the other sealed. */
const secretKeys = [randomBytes(32)];
let a: TestApp;
let b: TestApp;

async function replica(name: string): Promise<TestApp> {
  const app: FastifyInstance = await buildApp({
    dbPath: join(dir, `${name}.db`), // unused on PostgreSQL
    databaseUrl: database.url,
    secretKeys,
    adminToken: ADMIN_TOKEN,
    backendPolicy: LOCAL_BACKEND_POLICY,
    redisUrl: REDIS_URL,
    lease: { ttlMs: 2_000, holderId: `replica-${name}` },
  });
  await app.ready();
  return { app, dir, dbPath: '', close: () => app.close() };
}

beforeAll(async () => {
  if (!reachable) return;
  database = await createTestPgDatabase();
  a = await replica('a');
  b = await replica('b');
});

afterAll(async () => {
  if (!reachable) return;
  const ns = a.app.namespace;
  await b?.close();
  await a?.close();
  await deleteRedisKeys(REDIS_URL, [`${ns.clusterId}:*`, `${ns.healthKeyPrefix}:*`, `bull:${ns.healthQueue}:*`]);
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** The listeners a node holds, as ids. */
const held = (node: FakeNode) => [...heldListeners(node).keys()].sort();

/** A node registered on A and connected to `replica`: its id and its channel. */
async function nodeOn(replica: TestApp, kind: 'l4' | 'l7', address: string) {
  const created = await call(a.app, ADMIN_TOKEN, 'POST', '/v1/nodes', { kind, address });
  const identity = { nodeId: created.body.id as string, kind, address };
  return { id: identity.nodeId, channel: await connectFake(replica, identity, identity) };
}

/**
 * A new tenant's LB made on A with one listener on `port` to `backend`:9000, deleted when the test ends, with
 * `nodeIds` after it (an LB in mode `all` left behind would be placed on the later tests' nodes).
 */
async function lbWithListener(
  protocol: 'tcp' | 'http',
  port: number,
  backend: string,
  options: { placement?: unknown; nodeIds?: string[] } = {},
) {
  const { token } = await newTenant(a.app);
  const lb = await call(a.app, token, 'POST', '/v1/load-balancers', {
    name: `lb-${port}`,
    ...(options.placement === undefined ? {} : { placement: options.placement }),
  });
  expect(lb.status).toBe(201);
  const lbId = lb.body.id as string;
  onTestFinished(async () => {
    await call(a.app, token, 'DELETE', `/v1/load-balancers/${lbId}`);
    for (const id of options.nodeIds ?? []) await call(a.app, ADMIN_TOKEN, 'DELETE', `/v1/nodes/${id}`);
  });
  const sg = await call(a.app, token, 'POST', `/v1/load-balancers/${lbId}/server-groups`, {
    name: 'g',
    servers: [{ address: backend, port: 9000 }],
  });
  const listener = await call(a.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
    protocol,
    port,
    serverGroupId: sg.body.id,
  });
  expect(listener.status).toBe(201);
  /** The LB as `replica` answers it. */
  const lbOn = async (replica: TestApp) => (await call(replica.app, token, 'GET', `/v1/load-balancers/${lbId}`)).body;
  return { token, lbId, listenerId: listener.body.id as string, lbOn };
}

describe.skipIf(!reachable)('two API replicas on one PostgreSQL', () => {
  it('share one deployment: the cluster id, the admin token, a tenant token made on the other', async () => {
    expect(b.app.namespace).toEqual(a.app.namespace);
    const { token } = await newTenant(a.app);
    expect((await call(b.app, token, 'GET', '/v1/load-balancers')).status).toBe(200);
  });

  it('answers any call on either: a create on one is read, changed and deleted on the other', async () => {
    const { token } = await newTenant(a.app);
    const created = await call(a.app, token, 'POST', '/v1/load-balancers', { name: 'x' });
    expect(created.status).toBe(201);
    const read = await call(b.app, token, 'GET', `/v1/load-balancers/${created.body.id}`);
    expect(read.body).toMatchObject({ id: created.body.id, address: created.body.address });
    const etag = read.headers.etag as string;
    const patched = await call(
      b.app,
      token,
      'PATCH',
      `/v1/load-balancers/${created.body.id}`,
      { name: 'y' },
      {
        'if-match': etag,
      },
    );
    expect(patched.status).toBe(200);
    // The first replica's view of the ETag is the same row's: the stale one is refused there too.
    const stale = await call(a.app, token, 'DELETE', `/v1/load-balancers/${created.body.id}`, undefined, {
      'if-match': etag,
    });
    expect(stale.status).toBe(412);
    expect((await call(a.app, token, 'DELETE', `/v1/load-balancers/${created.body.id}`)).status).toBe(204);
    expect((await call(b.app, token, 'GET', `/v1/load-balancers/${created.body.id}`)).status).toBe(404);
  });

  it('creates once for an Idempotency-Key sent to both at the same time, and replays it on each', async () => {
    const { token } = await newTenant(a.app);
    const key = { 'idempotency-key': `k-${randomBytes(6).toString('hex')}` };
    const [one, two] = await Promise.all([
      call(a.app, token, 'POST', '/v1/load-balancers', { name: 'once' }, key),
      call(b.app, token, 'POST', '/v1/load-balancers', { name: 'once' }, key),
    ]);
    expect([one.status, two.status]).toEqual([201, 201]);
    expect(two.body.id).toBe(one.body.id);
    const list = await call(a.app, token, 'GET', '/v1/load-balancers');
    expect(list.body.items.map((lb: { id: string }) => lb.id)).toEqual([one.body.id]);
  });

  it('gives concurrent creates on both replicas distinct VIPs', async () => {
    const { token } = await newTenant(a.app);
    const creates = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        call(i % 2 === 0 ? a.app : b.app, token, 'POST', '/v1/load-balancers', { name: `lb-${i}` }),
      ),
    );
    expect(creates.map((c) => c.status)).toEqual(Array(8).fill(201));
    expect(new Set(creates.map((c) => c.body.address)).size).toBe(8);
  });

  it('says whether an LB is active on a replica none of its nodes is connected to, as the one they are on does', async () => {
    const { id: l4Id, channel: l4 } = await nodeOn(b, 'l4', '127.0.0.66');
    const { id: l7Id, channel: l7 } = await nodeOn(b, 'l7', '127.0.0.67');
    const ids = [l4Id, l7Id];
    const { token, lbId, lbOn } = await lbWithListener('http', 7380, '127.0.0.68');
    await until('both nodes on B holding the listener', () => held(l4).length + held(l7).length === 2, 3_000);
    const nodesOn = async (replica: TestApp) =>
      (await lbOn(replica)).nodes.map((n: { nodeId: string; converged: boolean }) => `${n.nodeId} ${n.converged}`);
    // A holds no node: it knows them, not yet converged, from what B publishes.
    const unacked = [`${ids[0]} false`, `${ids[1]} false`];
    await until('A naming both nodes, not converged', async () => `${await nodesOn(a)}` === `${unacked}`, 3_000);
    expect((await lbOn(a)).status).toBe('provisioning');
    l4.ack();
    l7.ack();
    await until('A saying the LB is active', async () => (await lbOn(a)).status === 'active', 3_000);
    const onA = await lbOn(a);
    expect(onA.nodes).toEqual([
      { nodeId: ids[0], kind: 'l4', address: '127.0.0.66', online: true, converged: true, role: 'active' },
      { nodeId: ids[1], kind: 'l7', address: '127.0.0.67', online: true, converged: true },
    ]);
    expect((await lbOn(b)).nodes).toEqual(onA.nodes);
    const listed = await call(a.app, token, 'GET', '/v1/load-balancers');
    expect(listed.body.items[0]).toMatchObject({ id: lbId, status: 'active', nodes: onA.nodes });
    // Nodes gone from B are gone from A's answer too.
    for (const id of ids) expect((await call(a.app, ADMIN_TOKEN, 'DELETE', `/v1/nodes/${id}`)).status).toBe(204);
    await until('A naming no node', async () => (await lbOn(a)).nodes.length === 0, 3_000);
  });

  it("shows a listener's bind errors on a replica none of the failing nodes is connected to, until they heal", async () => {
    const { id: nodeId, channel: node } = await nodeOn(b, 'l4', '127.0.0.69');
    const { token, lbId, listenerId } = await lbWithListener('tcp', 7303, '127.0.0.70', { nodeIds: [nodeId] });
    await until('the node on B holding the listener', () => held(node).includes(listenerId), 3_000);
    const reason = 'cannot bind tcp 127.1.0.1:7303: EADDRINUSE';
    const load = { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 };
    node.ack();
    node.say({ type: 'heartbeat', load, failedListeners: [{ listenerId, reason }] });
    const path = `/v1/load-balancers/${lbId}/listeners`;
    const errorsOn = async (replica: TestApp) => (await call(replica.app, token, 'GET', `${path}/${listenerId}`)).body;
    await until('A naming the node on B', async () => (await errorsOn(a)).bindErrors.length === 1, 3_000);
    expect((await errorsOn(a)).bindErrors).toEqual([{ nodeId, reason }]);
    expect((await errorsOn(b)).bindErrors).toEqual([{ nodeId, reason }]);
    const listed = await call(a.app, token, 'GET', path);
    expect(listed.body.items).toMatchObject([{ id: listenerId, bindErrors: [{ nodeId, reason }] }]);
    node.say({ type: 'heartbeat', load, failedListeners: [] });
    await until('A saying it healed', async () => (await errorsOn(a)).bindErrors.length === 0, 3_000);
  });

  it('tells one L4 node of the fleet to bind a VIP when the nodes are split between replicas, and moves it across', async () => {
    // Without SO_REUSEPORT a VIP has one binder (active-standby). Each replica chose among its own nodes, so x
    // (on A) and y (on B) were both told to bind it, and the second failed with EADDRINUSE for good.
    const { id: xId, channel: x } = await nodeOn(a, 'l4', '127.0.0.71');
    const { id: yId, channel: y } = await nodeOn(b, 'l4', '127.0.0.72');
    const ids: Record<string, string> = { x: xId, y: yId };
    const { listenerId, lbOn } = await lbWithListener('tcp', 7302, '127.0.0.73', { nodeIds: [xId, yId] });
    const binders = () => [x, y].filter((n) => held(n).includes(listenerId)).length;
    await until('one node of the two binding the VIP', () => binders() === 1, 3_000);
    // And it stays so (not a moment between two flips).
    await new Promise((r) => setTimeout(r, 600));
    expect(binders()).toBe(1);
    const [binder, standby] = held(x).includes(listenerId) ? (['x', 'y'] as const) : (['y', 'x'] as const);
    x.ack();
    y.ack();
    await until('A saying the LB is active', async () => (await lbOn(a)).status === 'active', 3_000);
    const roles = (await lbOn(b)).nodes.map((n: { nodeId: string; role: string }) => `${n.nodeId} ${n.role}`).sort();
    expect(roles).toEqual([`${ids[binder]} active`, `${ids[standby]} standby`].sort());
    // The binder's node is deleted: the other replica's node takes the VIP over.
    expect((await call(a.app, ADMIN_TOKEN, 'DELETE', `/v1/nodes/${ids[binder]}`)).status).toBe(204);
    const survivor = standby === 'x' ? x : y;
    await until('the standby on the other replica binding the VIP', () => held(survivor).includes(listenerId), 3_000);
  });

  it('places a spread LB on nodeCount nodes of the whole fleet when the nodes are split between replicas', async () => {
    // Each replica placed it on nodeCount of its own nodes: with x on A and y on B, on both.
    const { id: xId, channel: x } = await nodeOn(a, 'l4', '127.0.0.74');
    const { id: yId, channel: y } = await nodeOn(b, 'l4', '127.0.0.75');
    const { listenerId, lbOn } = await lbWithListener('tcp', 7304, '127.0.0.76', {
      placement: { mode: 'spread', nodeCount: 1 },
      nodeIds: [xId, yId],
    });
    const hostsOn = async (replica: TestApp) => (await lbOn(replica)).nodes.map((n: { nodeId: string }) => n.nodeId);
    await until('one node holding the listener', () => [x, y].some((n) => held(n).includes(listenerId)), 3_000);
    x.ack();
    y.ack();
    const oneHost = async () => {
      const [onA, onB] = [await hostsOn(a), await hostsOn(b)];
      return onA.length === 1 && `${onA}` === `${onB}`;
    };
    await until('one host in the fleet, the same on both replicas', oneHost, 3_000);
    // And it stays so on both replicas (not a moment between two placements).
    await new Promise((r) => setTimeout(r, 800));
    const [host] = await hostsOn(a);
    expect(await hostsOn(b)).toEqual([host]);
    expect(await hostsOn(a)).toEqual([host]);
    const [hostNode, other] = host === xId ? [x, y] : [y, x];
    expect(held(hostNode)).toContain(listenerId);
    expect(held(other)).not.toContain(listenerId);
    // The host is deleted: the LB is placed on the other replica's node.
    expect((await call(a.app, ADMIN_TOKEN, 'DELETE', `/v1/nodes/${host}`)).status).toBe(204);
    await until('the other node holding the listener', () => held(other).includes(listenerId), 3_000);
  });

  it("sends a write on one replica to the nodes connected to the other (HTTPS keys opened with the other's seal)", async () => {
    // Registered on A, connected to B.
    const { channel: l4 } = await nodeOn(b, 'l4', '127.0.0.61');
    const { channel: l7 } = await nodeOn(b, 'l7', '127.0.0.62');
    const { token } = await newTenant(a.app);
    const lb = await call(a.app, token, 'POST', '/v1/load-balancers', { name: 'served' });
    const sg = await call(a.app, token, 'POST', `/v1/load-balancers/${lb.body.id}/server-groups`, {
      name: 'g',
      servers: [{ address: '127.0.0.63', port: 9000 }],
    });
    const pem = makeCertificate('replicas.example');
    const cert = await call(a.app, token, 'POST', '/v1/certificates', { name: 'c', ...pem });
    const tcp = await call(a.app, token, 'POST', `/v1/load-balancers/${lb.body.id}/listeners`, {
      protocol: 'tcp',
      port: 7301,
      serverGroupId: sg.body.id,
    });
    const https = await call(a.app, token, 'POST', `/v1/load-balancers/${lb.body.id}/listeners`, {
      protocol: 'https',
      port: 7443,
      serverGroupId: sg.body.id,
      certificateId: cert.body.id,
    });
    expect([tcp.status, https.status]).toEqual([201, 201]);
    // Written on A; B's nodes hear of it through A's signal, well before B's fleet rescan (30 s).
    await until('the L4 node on B holding both listeners', () => held(l4).length === 2, 3_000);
    expect(held(l4)).toEqual([tcp.body.id, https.body.id].sort());
    await until('the L7 node on B holding the HTTPS listener', () => held(l7).includes(https.body.id), 3_000);
    expect(JSON.stringify(l7.sent)).toContain(pem.privateKey.split('\n')[1]);
    // And a delete on A takes it away there too.
    await call(a.app, token, 'DELETE', `/v1/load-balancers/${lb.body.id}/listeners/${tcp.body.id}`);
    await until('the L4 node on B without the TCP listener', () => !held(l4).includes(tcp.body.id), 3_000);
  });

  it('closes a node deleted on one replica on the other too, and one whose credential was replaced', async () => {
    const deleted = await nodeOn(b, 'l4', '127.0.0.64');
    const rotated = await nodeOn(b, 'l4', '127.0.0.65');
    expect([deleted.channel.closed, rotated.channel.closed]).toEqual([null, null]);
    expect((await call(a.app, ADMIN_TOKEN, 'DELETE', `/v1/nodes/${deleted.id}`)).status).toBe(204);
    await until('the deleted node closed on B', () => deleted.channel.closed ?? undefined, 3_000);
    expect(deleted.channel.closed).toMatchObject({ code: 4001, reason: 'node deleted' });
    // A new join token, redeemed: the credential the node on B holds is replaced.
    const token = await call(a.app, ADMIN_TOKEN, 'POST', `/v1/nodes/${rotated.id}/credentials`);
    expect(token.status).toBe(201);
    const enrolled = await a.app.inject({
      method: 'POST',
      url: '/control/v1/enroll',
      headers: { authorization: `Bearer ${token.body.joinToken}` },
    });
    expect(enrolled.statusCode).toBe(200);
    await until('the rotated node closed on B', () => rotated.channel.closed ?? undefined, 3_000);
    expect(rotated.channel.closed).toMatchObject({ code: 4001, reason: 'credential rotated' });
  });
});
