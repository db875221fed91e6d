import { Kind, type Static, type TObject, type TProperties, type TSchema, Type, TypeRegistry } from '@sinclair/typebox';

/** Prefixes of every resource id: the prefix tells a reader (and a log line) what an id names. */
export const ID_PREFIX = {
  tenant: 'tnt',
  token: 'tok',
  loadBalancer: 'lb',
  listener: 'lsn',
  serverGroup: 'sg',
  server: 'srv',
  rule: 'rule',
  certificate: 'cert',
  acl: 'acl',
  node: 'node',
  addressPool: 'pool',
  event: 'evt',
} as const;
export type IdKind = keyof typeof ID_PREFIX;

/** An object schema that rejects unknown fields: a misspelt field is an error, never silently ignored. */
export function StrictObject<T extends TProperties>(
  properties: T,
  options: { description?: string; title?: string } = {},
) {
  return Type.Object(properties, { ...options, additionalProperties: false });
}

export function Nullable<T extends TSchema>(schema: T) {
  return Type.Union([schema, Type.Null()]);
}

/** Path parameter id. No pattern on purpose: a malformed id is simply not found (404), like any unknown id. */
export const PathId = Type.String({ minLength: 1, maxLength: 64 });

export const ResourceId = (kind: IdKind) =>
  Type.String({ pattern: `^${ID_PREFIX[kind]}-[0-9a-z]{20}$`, description: `${ID_PREFIX[kind]}- id` });

/**
 * A node's id. Nodes registered through the API get a `node-` id; a node that joined on the legacy shared
 * token keeps the id it brought in its hello, and the API lists it under that id: so the id is documented
 * by the hello's rule (which every `node-` id also meets), not as `node-` only.
 */
export const NodeId = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$',
  description: 'node- id, or the id a node that joined on the legacy shared token brought',
});
export const Timestamp = Type.String({ format: 'date-time', description: 'RFC 3339 UTC timestamp' });
export const Name = Type.String({ minLength: 1, maxLength: 80, pattern: '^[^\\u0000-\\u001f\\u007f]+$' });
export const Description = Type.String({ maxLength: 256, pattern: '^[^\\u0000-\\u001f\\u007f]*$' });
export const Port = Type.Integer({ minimum: 1, maximum: 65535 });
export const Weight = Type.Integer({ minimum: 0, maximum: 100, description: '0 takes no new connections (drain)' });
export const IpAddress = Type.String({ minLength: 2, maxLength: 45, description: 'IPv4 or IPv6 address' });
const TagKey = Type.String({ minLength: 1, maxLength: 128, pattern: '^[^\\u0000-\\u001f\\u007f]+$' });
// A key outside the pattern would otherwise pass unchecked (and its value with it); propertyNames carries
// the key rule into the OpenAPI document, where patternProperties becomes additionalProperties.
export const Tags = Type.Record(TagKey, Type.String({ maxLength: 256 }), {
  maxProperties: 20,
  additionalProperties: false,
  propertyNames: TagKey,
  description: 'free key/value labels',
});

export const Timestamps = {
  createdAt: Timestamp,
  updatedAt: Timestamp,
};

export const ListQuery = StrictObject({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});
export type ListQuery = Static<typeof ListQuery>;

export function Page<T extends TSchema>(item: T, name: string) {
  return Type.Object(
    { items: Type.Array(item), nextCursor: Nullable(Type.String()) },
    { title: name, additionalProperties: false },
  );
}

/** A field path and what is wrong with it, as in a validation problem's `errors`. */
export const FieldError = Type.Object({
  path: Type.String({ description: 'JSON pointer into the request, e.g. /body/port' }),
  message: Type.String(),
});
export type FieldError = Static<typeof FieldError>;

/** What a `quota_exceeded` problem carries besides its text: which quota, its limit and current usage. */
export const QuotaExceeded = Type.Object(
  {
    name: Type.String({ description: 'the quota, as GET /v1/quotas names it' }),
    limit: Type.Integer(),
    usage: Type.Integer({ description: 'usage before the refused request' }),
    requested: Type.Integer({ description: 'how many the refused request would have added' }),
  },
  { title: 'QuotaExceeded', additionalProperties: false },
);
export type QuotaExceeded = Static<typeof QuotaExceeded>;

/** RFC 9457 problem details: the one error body of every route. */
export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String({ description: 'stable machine-readable error code' }),
    instance: Type.Optional(Type.String()),
    errors: Type.Optional(Type.Array(FieldError)),
    requestId: Type.Optional(
      Type.String({ description: 'on 5xx: the request id, also in the x-request-id header and the server log' }),
    ),

    quota: Type.Optional(QuotaExceeded),
  },
  { title: 'Problem' },
);
export type Problem = Static<typeof Problem>;

export type ObjectSchema = TObject;

// Registered so TypeBox's own Value.Check (used by the nodes and the control channel) knows the kind;
// Ajv (the API) reads the plain `enum` keyword.
if (!TypeRegistry.Has('StringEnum')) {
  TypeRegistry.Set<{ enum: string[] }>(
    'StringEnum',
    (schema, value) => typeof value === 'string' && schema.enum.includes(value),
  );
}

/** A string enum as JSON Schema `enum`: one clear validation message and a plain enum in the OpenAPI document. */
export function StringEnum<const T extends readonly string[]>(values: T, options: { description?: string } = {}) {
  return Type.Unsafe<T[number]>({ [Kind]: 'StringEnum', type: 'string', enum: [...values], ...options });
}
