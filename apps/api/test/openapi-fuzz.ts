import fc from 'fast-check';

// Arbitraries derived from the OpenAPI document: values a schema accepts, and values made to break it.
// Whether a generated body really breaks its schema is decided afterwards by Ajv on the same schema, so
// these generators may be approximate; the document stays the oracle.

export interface Schema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  maxProperties?: number;
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  anyOf?: Schema[];
  oneOf?: Schema[];
  $ref?: string;
}

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT';

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: Schema;
}

export interface Operation {
  method: Method;
  path: string;
  operationId: string;
  parameters: Parameter[];
  body?: Schema;
  /** Statuses the document says this operation can answer. */
  responses: number[];
}

interface OpenApiDocument {
  paths: Record<string, Record<string, any>>;
  components?: { schemas?: Record<string, unknown> };
}

/**
 * The schema with every local `#/components/schemas/…` reference replaced by what it names: the
 * document names its resources' schemas once and refers to them; the fuzzer walks plain schemas.
 */
function inlined(schema: unknown, document: OpenApiDocument): unknown {
  if (Array.isArray(schema)) return schema.map((s) => inlined(s, document));
  if (!schema || typeof schema !== 'object') return schema;
  const { $ref, ...rest } = schema as { $ref?: unknown };
  if (typeof $ref === 'string' && $ref.startsWith('#/components/schemas/')) {
    const named = document.components?.schemas?.[$ref.slice('#/components/schemas/'.length)];
    if (named === undefined) throw new Error(`unresolved ${$ref}`);
    return inlined({ ...(named as object), ...rest }, document);
  }
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, inlined(v, document)]));
}

/** Every operation of the document, in document order. */
export function operationsOf(document: OpenApiDocument): Operation[] {
  return Object.entries(document.paths).flatMap(([path, ops]) =>
    (['get', 'post', 'patch', 'delete', 'put'] as const)
      .filter((m) => ops[m])
      .map((m) => {
        const op = ops[m];
        const raw = op.requestBody?.content?.['application/json']?.schema;
        const body = raw === undefined ? undefined : (inlined(raw, document) as Schema);
        return {
          method: m.toUpperCase() as Method,
          path,
          operationId: op.operationId as string,
          parameters: (op.parameters ?? []) as Parameter[],
          ...(body ? { body } : {}),
          responses: Object.keys(op.responses ?? {}).map(Number),
        };
      }),
  );
}

export interface Hints {
  /** Real ids: a string field whose pattern or name asks for an id draws from these too. */
  ids: string[];
  /** Property name → strings worth trying there (real PEMs, addresses…), on top of schema-shaped ones. */
  byName: Record<string, fc.Arbitrary<string>>;
}

const allowedTypes = (schema: Schema): Set<string> => {
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) return new Set(branches.flatMap((b) => [...allowedTypes(b)]));
  if (schema.enum) return new Set(schema.enum.map((v) => (v === null ? 'null' : typeof v)));
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
  return new Set(types.flatMap((t) => (t === 'number' ? ['number', 'integer'] : [t])));
};

/** Strings that travel badly: control characters, lone surrogates, bidi overrides, astral code points. */
const nastyChar = fc.constantFrom(
  '\u0000',
  '\n',
  '\r',
  '\u007f',
  '\uD800',
  '\uDFFF',
  '\u202E',
  '\uFEFF',
  '😀',
  '"',
  '\\',
  '<',
  '%',
  ' ',
);
export const nastyString = (maxLength = 40) =>
  fc.oneof(
    fc.string({ maxLength, unit: 'grapheme' }),
    fc.string({ maxLength, unit: 'binary' }),
    fc.array(fc.oneof(nastyChar, fc.string({ maxLength: 3 })), { maxLength }).map((a) => a.join('')),
  );
/** 10k to 200k characters: well past every maxLength, sometimes past the body limit. */
export const hugeString = fc
  .tuple(fc.string({ minLength: 1, maxLength: 8, unit: 'binary' }), fc.integer({ min: 10_000, max: 200_000 }))
  .map(([s, n]) => s.repeat(Math.ceil(n / s.length)).slice(0, n));
/**
 * Arrays or objects nested deep. Built only when serialised: fast-check prints, clones and shrinks the
 * values it holds recursively, and a value 5,000 deep would overflow its stack rather than the server's.
 */
export class Deep {
  constructor(
    readonly depth: number,
    readonly objects: boolean,
  ) {}
  text(): string {
    const d = this.depth;
    return this.objects ? `${'{"a":'.repeat(d)}1${'}'.repeat(d)}` : `${'['.repeat(d)}1${']'.repeat(d)}`;
  }
  [fc.toStringMethod](): string {
    return `Deep(${this.depth}, ${this.objects ? 'objects' : 'arrays'})`;
  }
}
/** JSON text of a generated value; a Deep is written out as text, which JSON.stringify could not do 5,000 deep. */
export function toJsonText(value: unknown): string {
  if (value instanceof Deep) return value.text();
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : toJsonText(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const fields = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${fields.map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Arrays or objects nested 20 to 5,000 deep. */
export const deepJson = fc
  .tuple(fc.integer({ min: 20, max: 5_000 }), fc.boolean())
  .map(([depth, objects]) => new Deep(depth, objects));

const ofType: Record<string, fc.Arbitrary<unknown>> = {
  string: nastyString(20),
  integer: fc.oneof(fc.integer(), fc.constantFrom(-1, 0, 2 ** 53 + 2, -(2 ** 53) - 2)),
  number: fc.oneof(
    fc.double({ noNaN: true, noDefaultInfinity: true, noInteger: true }),
    fc.constantFrom(1e308, -1e308),
  ),
  boolean: fc.boolean(),
  null: fc.constant(null),
  array: fc.oneof(fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }), deepJson),
  object: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
};

/** A value of a JSON type the schema does not allow. */
function wrongType(schema: Schema): fc.Arbitrary<unknown> {
  const allowed = allowedTypes(schema);
  const others = Object.keys(ofType).filter(
    (t) => !allowed.has(t) && !(t === 'integer' && allowed.has('number')) && !(t === 'number' && allowed.has('number')),
  );
  return fc.oneof(...others.map((t) => ofType[t]!));
}

function checkSupported(schema: Schema): void {
  if (schema.$ref) throw new Error(`$ref in a request schema is not supported by the fuzzer: ${schema.$ref}`);
}

const idLike = (pattern: string | undefined, name: string) =>
  (pattern !== undefined && /^\^[a-z]+-\[0-9a-z\]\{20\}\$$/.test(pattern)) || /Ids?$/.test(name);

/** A value the schema accepts (the fuzzer's "valid by chance" cases and the base for one-field mutations). */
export function validValue(schema: Schema, hints: Hints, name = ''): fc.Arbitrary<unknown> {
  checkSupported(schema);
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) return fc.oneof(...branches.map((b) => validValue(b, hints, name)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      return validString(schema, hints, name);
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 });
    case 'number':
      return fc.double({
        min: schema.minimum ?? -1e6,
        max: schema.maximum ?? 1e6,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const item = validValue(schema.items ?? {}, hints, name);
      const minLength = schema.minItems ?? 0;
      const maxLength = Math.min(schema.maxItems ?? minLength + 4, minLength + 4);
      return schema.uniqueItems
        ? fc.uniqueArray(item, { minLength, maxLength, selector: (v) => JSON.stringify(v) })
        : fc.array(item, { minLength, maxLength });
    }
    case 'object': {
      const props = schema.properties ?? {};
      const record = fc.record(
        Object.fromEntries(Object.entries(props).map(([k, s]) => [k, validValue(s, hints, k)])),
        { requiredKeys: (schema.required ?? []).filter((k) => k in props) },
      );
      if (typeof schema.additionalProperties !== 'object') return record;
      const extra = fc.dictionary(
        fc.string({ minLength: 1, maxLength: 16 }).filter((k) => k !== '__proto__' && !(k in props)),
        validValue(schema.additionalProperties, hints, name),
        { maxKeys: Math.min(schema.maxProperties ?? 4, 4) },
      );
      return fc.tuple(record, extra).map(([r, e]) => ({ ...e, ...r }));
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function validString(schema: Schema, hints: Hints, name: string): fc.Arbitrary<string> {
  const minLength = schema.minLength ?? 0;
  const maxLength = schema.maxLength ?? 200;
  const options: fc.Arbitrary<string>[] = [];
  if (idLike(schema.pattern, name)) {
    const pattern = schema.pattern ? new RegExp(schema.pattern) : null;
    const ids = hints.ids.filter((id) => pattern === null || pattern.test(id));
    if (ids.length > 0) options.push(fc.constantFrom(...ids));
  }
  const named = hints.byName[name];
  if (named) options.push(named);
  if (schema.format === 'date-time') {
    options.push(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()));
  } else if (schema.pattern) {
    options.push(
      fc
        .stringMatching(new RegExp(schema.pattern, 'u'))
        .filter((s) => [...s].length >= minLength && [...s].length <= maxLength),
    );
  } else {
    const bounds = { minLength, maxLength: Math.min(maxLength, minLength + 40) };
    options.push(fc.string({ ...bounds, unit: 'grapheme' }), fc.string({ ...bounds, unit: 'binary' }));
  }
  return fc.oneof(...options);
}

const omit = (o: Record<string, unknown>, key: string) => {
  const { [key]: _, ...rest } = o;
  return rest;
};

/** A value made to break the schema somewhere (possibly deep inside); Ajv decides whether it does. */
export function invalidValue(schema: Schema, hints: Hints, name = ''): fc.Arbitrary<unknown> {
  checkSupported(schema);
  const options: fc.Arbitrary<unknown>[] = [wrongType(schema), deepJson];
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) {
    options.push(...branches.map((b) => invalidValue(b, hints, name)));
    return fc.oneof(...options);
  }
  if (schema.enum) {
    const known = new Set(schema.enum);
    options.push(
      nastyString().filter((s) => !known.has(s)),
      fc.constantFrom(...schema.enum.filter((v) => typeof v === 'string').map((v) => (v as string).toUpperCase())),
    );
    return fc.oneof(...options);
  }
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const valid = validValue(schema, hints, name);
  switch (type) {
    case 'string': {
      const s = schema as Schema & { minLength?: number; maxLength?: number };
      if (s.maxLength !== undefined) {
        options.push(fc.string({ minLength: s.maxLength + 1, maxLength: s.maxLength + 40, unit: 'grapheme' }));
      }
      options.push(hugeString);
      if ((s.minLength ?? 0) > 0) options.push(fc.constant(''));
      if (s.pattern) {
        options.push(
          fc
            .tuple(valid as fc.Arbitrary<string>, nastyChar, fc.nat())
            .map(([v, c, at]) => v.slice(0, at % (v.length + 1)) + c + v.slice(at % (v.length + 1))),
        );
      }
      break;
    }
    case 'integer':
    case 'number': {
      const min = schema.minimum;
      const max = schema.maximum;
      if (min !== undefined) {
        options.push(fc.constantFrom(min - 1, min - 0.5, -1e308));
        if (min - 1 >= Number.MIN_SAFE_INTEGER)
          options.push(fc.integer({ min: Number.MIN_SAFE_INTEGER, max: min - 1 }));
      }
      if (max !== undefined) {
        options.push(fc.constantFrom(max + 1, max + 0.5, 1e308));
        if (max + 1 <= Number.MAX_SAFE_INTEGER)
          options.push(fc.integer({ min: max + 1, max: Number.MAX_SAFE_INTEGER }));
      }
      if (type === 'integer') options.push(fc.double({ noInteger: true, noNaN: true, noDefaultInfinity: true }));
      options.push(valid.map((v) => String(v)));
      break;
    }
    case 'boolean':
      options.push(fc.constantFrom('true', 'false', 1, 0));
      break;
    case 'array': {
      const item = schema.items ?? {};
      const validItem = validValue(item, hints, name);
      if (schema.maxItems !== undefined) {
        options.push(fc.array(validItem, { minLength: schema.maxItems + 1, maxLength: schema.maxItems + 3 }));
      }
      if ((schema.minItems ?? 0) > 0) options.push(fc.array(validItem, { maxLength: schema.minItems! - 1 }));
      if (schema.uniqueItems) options.push(validItem.map((v) => [v, v]));
      options.push(
        fc
          .tuple(fc.array(validItem, { maxLength: 3 }), invalidValue(item, hints, name), fc.nat())
          .map(([a, bad, at]) => [...a.slice(0, at % (a.length + 1)), bad, ...a.slice(at % (a.length + 1))]),
      );
      break;
    }
    case 'object': {
      const props = schema.properties ?? {};
      const obj = valid as fc.Arbitrary<Record<string, unknown>>;
      const required = (schema.required ?? []).filter((k) => k in props);
      if (required.length > 0) {
        options.push(fc.tuple(obj, fc.constantFrom(...required)).map(([o, k]) => omit(o, k)));
      }
      if (schema.additionalProperties === false) {
        options.push(
          fc
            .tuple(
              obj,
              nastyString(20).filter((k) => k.length > 0 && !(k in props) && k !== '__proto__'),
              fc.oneof(fc.jsonValue({ maxDepth: 3 }), deepJson),
            )
            .map(([o, k, v]) => ({ ...o, [k]: v })),
        );
      } else if (typeof schema.additionalProperties === 'object') {
        const addl = schema.additionalProperties;
        options.push(
          fc
            .tuple(
              obj,
              nastyString(10).filter((k) => !(k in props) && k !== '__proto__'),
              invalidValue(addl, hints),
            )
            .map(([o, k, v]) => ({ ...o, [k]: v })),
        );
        if (schema.maxProperties !== undefined) {
          const n = schema.maxProperties + 1;
          options.push(fc.constant(Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']))));
        }
      }
      const keys = Object.keys(props);
      if (keys.length > 0) {
        options.push(
          fc
            .constantFrom(...keys)
            .chain((k) => fc.tuple(obj, invalidValue(props[k]!, hints, k)).map(([o, bad]) => ({ ...o, [k]: bad }))),
        );
      }
      break;
    }
  }
  return fc.oneof(...options);
}

/**
 * Percent-encodes every byte outside the unreserved set, so any string (lone surrogates become U+FFFD,
 * as a real client's UTF-8 encoder would send them) makes a URL the HTTP layer accepts.
 */
export function encodeSegment(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Header values as they arrive off the wire: visible ASCII, tab, and Latin-1 bytes. */
export const headerValue = (maxLength = 60) =>
  fc
    .array(fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.constant(0x09), fc.integer({ min: 0x80, max: 0xff })), {
      maxLength,
    })
    .map((codes) => String.fromCharCode(...codes).trim());
