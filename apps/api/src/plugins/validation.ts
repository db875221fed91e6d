import type { FieldError } from '@slb/model';
import { Ajv, type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifySchema } from 'fastify';

// Bodies are validated strictly: no type coercion (a port sent as "80" is an error) and no silent removal
// of unknown fields. Query strings and path params are text by nature, so they are coerced.
const bodyAjv = new Ajv({
  allErrors: true,
  coerceTypes: false,
  removeAdditional: false,
  useDefaults: false,
  strict: false,
});
const textAjv = new Ajv({
  allErrors: true,
  coerceTypes: 'array',
  removeAdditional: false,
  useDefaults: true,
  strict: false,
});
for (const ajv of [bodyAjv, textAjv]) {
  addFormats.default(ajv);
  ajv.addKeyword('example');
}

export function installValidation(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart }) => {
    // Fastify reads Ajv's boolean result and `.errors` directly.
    return (httpPart === 'body' ? bodyAjv : textAjv).compile(schema as FastifySchema);
  });
}

/** Turns Ajv's errors into one entry per field, with a path that names the field itself. */
export function fieldErrors(part: string, errors: ErrorObject[]): FieldError[] {
  const byPath = new Map<string, string>();
  for (const e of errors) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if') continue;
    let path = `/${part}${e.instancePath}`;
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'additionalProperties') {
      path += `/${String(e.params.additionalProperty)}`;
      message = 'unknown field';
    } else if (e.keyword === 'required') {
      path += `/${String(e.params.missingProperty)}`;
      message = 'is required';
    } else if (e.keyword === 'enum') {
      message = `must be one of ${(e.params.allowedValues as unknown[]).join(', ')}`;
    }
    if (!byPath.has(path)) byPath.set(path, message);
  }
  return [...byPath].map(([path, message]) => ({ path, message }));
}
