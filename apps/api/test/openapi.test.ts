import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';

const committed = readFileSync(new URL('../../../openapi/openapi.json', import.meta.url), 'utf8');

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(JSON.parse(committed));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('matches the routes (run `npm run openapi` after changing a route or schema)', async () => {
    const app = await buildApp({ dbPath: ':memory:', adminToken: 'openapi-generation-only-token' });
    await app.ready();
    expect(`${JSON.stringify(app.swagger(), null, 2)}\n`).toBe(committed);
    await app.close();
  });

  it('names every operation and documents problem responses', () => {
    const doc = JSON.parse(committed);
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        expect(op.operationId, `${method} ${path}`).toMatch(/^[a-z][A-Za-z]+$/);
        expect(op.tags?.length, `${method} ${path}`).toBeGreaterThan(0);
        expect(op.responses['401'], `${method} ${path}`).toBeDefined();
      }
    }
  });

  it('summarizes, describes and tags every operation with a declared tag, and describes every response', () => {
    const doc = JSON.parse(committed);
    const tags = new Set((doc.tags as { name: string; description: string }[]).map((t) => t.name));
    for (const t of doc.tags) expect(t.description, t.name).toBeTruthy();
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        expect(op.summary, `${method} ${path}`).toBeTruthy();
        expect(op.description, `${method} ${path}`).toBeTruthy();
        for (const tag of op.tags) expect(tags.has(tag), `${method} ${path} tag ${tag}`).toBe(true);
        for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
          const described = response.$ref ? doc.components.responses[response.$ref.split('/').pop()] : response;
          expect(described?.description, `${method} ${path} ${status}`).toBeTruthy();
          expect(described.description, `${method} ${path} ${status}`).not.toBe('Default Response');
        }
      }
    }
  });

  it('names a component schema for every resource and references it', () => {
    const doc = JSON.parse(committed);
    const resources = ['LoadBalancer', 'Listener', 'ServerGroup', 'Server', 'Rule', 'Certificate', 'Acl', 'Node'];
    for (const name of [...resources, 'Tenant', 'CreateLoadBalancer', 'LoadBalancerPage', 'Problem']) {
      expect(doc.components.schemas[name], name).toBeDefined();
    }
    const lb = doc.paths['/v1/load-balancers/{lbId}'].get.responses['200'].content['application/json'].schema;
    expect(lb).toEqual({ $ref: '#/components/schemas/LoadBalancer' });
    expect(doc.components.schemas.LoadBalancerPage.properties.items.items).toEqual({
      $ref: '#/components/schemas/LoadBalancer',
    });
  });
});
