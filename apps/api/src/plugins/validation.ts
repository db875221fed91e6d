import type { FieldError } from '@slb/model';
import { Ajv, type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifySchema } from 'fastify';

// Bodies are validated strictly: no type coercion (a port sent as "80" is an error) and no silent removal
// of unknown fields. Query strings and path params are text by nature, so they are coerced.
const bodyAjv = new Ajv({
  allErrors: true,
  // A union tagged by a field (`discriminator: { propertyName }` with `oneOf`) is checked against the one
  // branch its tag names, so the errors are that branch's and not every branch's.
  discriminator: true,
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
    const ajv = httpPart === 'body' ? bodyAjv : textAjv;
    // Fastify reads Ajv's boolean result and `.errors` directly.
    return app.deferredCompiles.validator(() => ajv.compile(schema as FastifySchema));
  });
}

/** A body validator as every route gets, for a route that validates against another form of its schema. */
export const compileBody = (schema: object) => bodyAjv.compile(schema);

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
    } else if (e.keyword === 'discriminator') {
      path += `/${String(e.params.tag)}`;
      message = e.params.error === 'tag' ? 'is required' : 'is not one of the known values';
    } else if (e.keyword === 'enum') {
      message = `must be one of ${(e.params.allowedValues as unknown[]).join(', ')}`;
    }
    if (!byPath.has(path)) byPath.set(path, message);
  }
  return [...byPath].map(([path, message]) => ({ path, message }));
}
