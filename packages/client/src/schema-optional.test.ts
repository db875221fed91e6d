import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';

// openapi-typescript makes a property with a `default` required unless told not to (--default-non-nullable
// false): a client could then not leave out what the API defaults, such as a health check's `enabled`.

interface ObjectSchema {
  properties?: Record<string, unknown>;
  required?: string[];
}

const document = JSON.parse(readFileSync(new URL('../../../openapi/openapi.json', import.meta.url), 'utf8')) as {
  components: { schemas: Record<string, ObjectSchema> };
};
const generated = readFileSync(new URL('./schema.ts', import.meta.url), 'utf8');

/** The property lines of one component schema in schema.ts (its own level only). */
function generatedProperties(name: string): Map<string, boolean> {
  const start = generated.indexOf(`\n        ${name}: {\n`);
  if (start < 0) throw new Error(`${name} is not in schema.ts`);
  const end = generated.indexOf('\n        };', start);
  const props = new Map<string, boolean>();
  for (const line of generated.slice(start, end).split('\n')) {
    const m = /^ {12}"?([A-Za-z0-9_]+)"?(\??):/.exec(line);
    if (m) props.set(m[1]!, m[2] === '?');
  }
  return props;
}

it('marks optional in the generated client every property the OpenAPI document does not require', () => {
  const wrong: string[] = [];
  let checked = 0;
  for (const [name, schema] of Object.entries(document.components.schemas)) {
    if (!schema.properties) continue;
    const props = generatedProperties(name);
    for (const prop of Object.keys(schema.properties)) {
      const optional = !(schema.required ?? []).includes(prop);
      checked++;
      if (props.get(prop) !== optional)
        wrong.push(`${name}.${prop}: ${optional ? 'optional' : 'required'} in the document`);
    }
  }
  expect(wrong).toEqual([]);
  expect(checked).toBeGreaterThan(100);
  expect(generatedProperties('HealthCheckInput').get('enabled')).toBe(true);
});
