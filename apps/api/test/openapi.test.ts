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
});
