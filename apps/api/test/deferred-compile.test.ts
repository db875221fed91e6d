import { Tenant } from '@slb/model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, makeApp, type TestApp } from './helpers.js';

// The API's route schemas are compiled on first use, not at start (plugins/deferred-compile.ts): every one of
// them must still compile, and a request must still be validated and serialized by them.

let api: TestApp;

beforeAll(async () => {
  api = await makeApp();
});

afterAll(async () => {
  await api.close();
});

describe('route schemas compiled on first use', () => {
  it('are not compiled by the start, and every one compiles', async () => {
    // Every route has a response schema at least, most a body, params or query schema too.
    const routes = api.app
      .printRoutes({ commonPrefix: false })
      .split('\n')
      .filter((l) => /\(\w+/.test(l)).length;
    expect(routes).toBeGreaterThan(40);
    const atStart = api.app.deferredCompiles.notCompiled;
    expect(atStart).toBeGreaterThan(routes);
    // One request compiles what its route needs (its query validator, its 200 serializer), and no more.
    expect((await call(api.app, ADMIN_TOKEN, 'GET', '/v1/tenants')).status).toBe(200);
    const left = api.app.deferredCompiles.notCompiled;
    expect(atStart - left).toBeGreaterThanOrEqual(1);
    expect(atStart - left).toBeLessThanOrEqual(3);
    expect(api.app.deferredCompiles.compileAll()).toBe(left);
    expect(api.app.deferredCompiles.compileAll()).toBe(0);
  });

  it('are compiled in the background once the API listens, after its warm-up delay', async () => {
    const listening = await makeApp(undefined, { schemaWarmUpMs: 50 });
    try {
      await listening.app.listen({ host: '127.0.0.1', port: 0 });
      const deadline = Date.now() + 10_000;
      let left = -1;
      while (Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        left = listening.app.deferredCompiles.notCompiled;
        if (left === 0) break;
      }
      expect(left).toBe(0);
    } finally {
      await listening.close();
    }
  });

  it('validate and serialize as compiled ones do', async () => {
    const wrongType = await call(api.app, ADMIN_TOKEN, 'POST', '/v1/tenants', { name: 7 });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.errors).toContainEqual({ path: '/body/name', message: 'must be string' });
    const unknownField = await call(api.app, ADMIN_TOKEN, 'POST', '/v1/tenants', { name: 'deferred', extra: 1 });
    expect(unknownField.status).toBe(400);
    expect(unknownField.body.errors).toContainEqual({ path: '/body/extra', message: 'unknown field' });
    const made = await call(api.app, ADMIN_TOKEN, 'POST', '/v1/tenants', { name: 'deferred' });
    expect(made.status).toBe(201);
    // The serializer writes the fields the response schema names, in its order.
    const read = await call(api.app, ADMIN_TOKEN, 'GET', `/v1/tenants/${made.body.id}`);
    expect(Object.keys(read.body)).toEqual(Object.keys(Tenant.properties));
    expect(read.body.name).toBe('deferred');
  });
});
