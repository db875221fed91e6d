import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectFake } from './fake-node.js';
import { ADMIN_TOKEN, call, makeApp, type TestApp } from './helpers.js';

// Registered nodes get API-allocated `node-…` ids; a node that joined on the legacy shared token keeps
// the id it brought. GET /v1/nodes answers both, so the documented schema must accept both: a client
// that validates responses against openapi/openapi.json would otherwise reject the whole list.
const doc = JSON.parse(readFileSync(new URL('../../../openapi/openapi.json', import.meta.url), 'utf8'));

function validatorOf(ref: string) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema({ $id: 'doc', components: doc.components });
  return ajv.compile({ $ref: `doc${ref}` });
}

describe('node ids in the documented schema', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => t.close());

  it('GET /v1/nodes, with a registered node and a legacy one, matches its OpenAPI response schema', async () => {
    const registered = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/nodes', { kind: 'l4', address: '127.0.0.13' });
    expect(registered.body.id).toMatch(/^node-/);
    await connectFake(t, { nodeId: 'l4-legacy.a', kind: 'l4', address: '127.0.0.11' });
    const list = await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes');
    expect(list.body.items.map((n: { id: string }) => n.id)).toContain('l4-legacy.a');

    const response = doc.paths['/v1/nodes'].get.responses['200'].content['application/json'].schema;
    const validate = validatorOf(response.$ref);
    expect(validate(list.body), JSON.stringify(validate.errors)).toBe(true);
    const one = await call(t.app, ADMIN_TOKEN, 'GET', '/v1/nodes/l4-legacy.a');
    expect(validatorOf('#/components/schemas/Node')(one.body)).toBe(true);
    t.app.controlHub.close();
  });
});
