import { Value } from '@sinclair/typebox/value';
import { DEFAULT_LISTENER_MAX_CONNECTIONS, MAX_LISTENER_MAX_CONNECTIONS, NodeSnapshot } from '@slb/model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileLbs } from '../src/control/compiler.js';
import { call, dumpDatabase, makeApp, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

let t: TestApp;
let token: string;
let lbId: string;
let sgId: string;

beforeAll(async () => {
  t = await makeApp();
  token = (await newTenant(t.app)).token;
  ({ lbId, sgId } = await newLoadBalancer(t.app, token));
});
afterAll(() => t.close());

const listeners = () => `/v1/load-balancers/${lbId}/listeners`;

describe('listener maxConnections', () => {
  it('defaults to the shared constant, takes a value on create and on PATCH, and reaches the node snapshot', async () => {
    const tcp = await call(t.app, token, 'POST', listeners(), { protocol: 'tcp', port: 100, serverGroupId: sgId });
    expect(tcp.status).toBe(201);
    expect(tcp.body.maxConnections).toBe(DEFAULT_LISTENER_MAX_CONNECTIONS);
    const udp = await call(t.app, token, 'POST', listeners(), {
      protocol: 'udp',
      port: 100,
      serverGroupId: sgId,
      maxConnections: 500,
    });
    expect(udp.status).toBe(201);
    expect(udp.body.maxConnections).toBe(500);
    const patched = await call(t.app, token, 'PATCH', `${listeners()}/${tcp.body.id}`, { maxConnections: 42 });
    expect(patched.status).toBe(200);
    expect(patched.body.maxConnections).toBe(42);
    expect((await call(t.app, token, 'GET', `${listeners()}/${tcp.body.id}`)).body.maxConnections).toBe(42);

    const compiled = (await compileLbs(t.app.data, [lbId])).get(lbId)!;
    const byId = new Map(compiled.l4.map((l) => [l.config.id, l.config]));
    expect(byId.get(tcp.body.id)?.maxConnections).toBe(42);
    expect(byId.get(udp.body.id)?.maxConnections).toBe(500);
    const snap = {
      version: 1,
      generatedAt: '2026-12-01T00:00:00Z',
      listeners: compiled.l4.map((l) => ({ ...l.config, bindAddresses: ['127.0.0.1'] })),
      l7Nodes: [],
    };
    expect(Value.Check(NodeSnapshot, snap)).toBe(true);
  });

  it.each([
    ['0', 0],
    ['above the maximum', MAX_LISTENER_MAX_CONNECTIONS + 1],
    ['fractional', 10.5],
    ['a string', '100'],
    ['null', null],
  ])('refuses %s with a 400 naming the field and changes nothing', async (_name, value) => {
    const created = await call(t.app, token, 'POST', listeners(), { protocol: 'tcp', port: 101, serverGroupId: sgId });
    const before = await dumpDatabase(t.app);
    const post = await call(t.app, token, 'POST', listeners(), {
      protocol: 'tcp',
      port: 102,
      serverGroupId: sgId,
      maxConnections: value,
    });
    const patch = await call(t.app, token, 'PATCH', `${listeners()}/${created.body.id}`, { maxConnections: value });
    for (const res of [post, patch]) {
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(JSON.stringify(res.body.errors)).toContain('/body/maxConnections');
    }
    expect(await dumpDatabase(t.app)).toBe(before);
    await call(t.app, token, 'DELETE', `${listeners()}/${created.body.id}`);
  });

  it('accepts the maximum itself', async () => {
    const res = await call(t.app, token, 'POST', listeners(), {
      protocol: 'http',
      port: 103,
      serverGroupId: sgId,
      maxConnections: MAX_LISTENER_MAX_CONNECTIONS,
    });
    expect(res.status).toBe(201);
    expect(res.body.maxConnections).toBe(MAX_LISTENER_MAX_CONNECTIONS);
  });
});
