import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { OPERATION_DOCS } from './operations.js';

type Json = Record<string, unknown>;
type Transform = NonNullable<FastifyDynamicSwaggerOptions['transform']>;
type TransformObject = NonNullable<FastifyDynamicSwaggerOptions['transformObject']>;

/**
 * Per route: the summary and description from OPERATION_DOCS, and a real description for each success
 * response (fastify-swagger says "Default Response" otherwise). Only the document changes: the route's
 * own schema, which validates and serializes, is left as it is.
 */
export const describeRoute: Transform = ({ schema, url }) => {
  if (!schema || schema.hide) return { schema, url };
  const operationId = (schema as Json).operationId as string | undefined;
  const docs = operationId ? OPERATION_DOCS[operationId] : undefined;
  const response = schema.response as Record<string, Json> | undefined;
  const described = response
    ? Object.fromEntries(Object.entries(response).map(([status, r]) => [status, describeResponse(status, r)]))
    : undefined;
  return {
    url,
    schema: {
      ...schema,
      ...(docs ? { summary: schema.summary ?? docs[0], description: schema.description ?? docs[1] } : {}),
      ...(described ? { response: described } : {}),
    },
  };
};

function describeResponse(status: string, response: Json): Json {
  if (response.content !== undefined || response.type === 'null') return response;
  const title = typeof response.title === 'string' ? response.title : '';
  const description = status === '201' ? `Created: ${readable(title) || 'the resource'}` : readable(title) || 'OK';
  // The content form keeps the schema itself free of the description, so it can become a component.
  return { description, content: { 'application/json': { schema: response } } };
}

/** `LoadBalancerPage` → `A page of load balancers`, `ServerGroup` → `The server group`. */
function readable(title: string): string {
  const words = title.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
  if (words.endsWith(' page')) return `A page of ${words.slice(0, -' page'.length)}s`;
  return words ? `The ${words}` : '';
}

/** Problem responses by status: one named response each, with what that status means here. */
const PROBLEM_RESPONSES: Record<string, readonly [name: string, description: string]> = {
  '400': ['BadRequest', 'The body, a parameter or a header is invalid; `errors` names each field.'],
  '401': ['Unauthorized', 'No valid bearer token.'],
  '403': ['Forbidden', 'The operation needs an admin token.'],
  '404': ['NotFound', "No such resource (another tenant's resources are not found either)."],
  '409': [
    'Conflict',
    'Conflicts with the current state: a port or address taken, a resource in use, deletion protection, a quota.',
  ],
  '412': ['PreconditionFailed', '`If-Match` does not match the current ETag.'],
  '413': ['PayloadTooLarge', 'The body is over 1 MiB.'],
  '415': ['UnsupportedMediaType', 'The body is not `application/json`.'],
  '422': ['UnprocessableEntity', 'Well-formed but not acceptable; `errors` names the field.'],
  '429': ['TooManyRequests', 'Rate limited: `retry-after` says in how many seconds to retry.'],
};

/** Replaces each operation's copy of a problem response by a reference to the named one. */
function nameProblemResponses(paths: Record<string, Record<string, Json>>, components: Json): void {
  components.responses ??= {};
  const responses = components.responses as Record<string, unknown>;
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      const own = operation.responses as Record<string, Json> | undefined;
      for (const [status, response] of Object.entries(own ?? {})) {
        const named = PROBLEM_RESPONSES[status];
        const content = response.content as Json | undefined;
        if (!named || !own || !content?.['application/problem+json']) continue;
        const shared = { description: named[1], content };
        const existing = responses[named[0]];
        // A route with its own problem schema for a status keeps its own response.
        if (existing !== undefined && JSON.stringify(existing) !== JSON.stringify(shared)) continue;
        responses[named[0]] = shared;
        own[status] = { $ref: `#/components/responses/${named[0]}` };
      }
    }
  }
}

/**
 * The whole document: every titled schema (the model's `title`s:
 * LoadBalancer, Listener, ServerGroup, their create/update bodies and pages) moved into
 * `components.schemas` and referenced, so generated clients get one named type per resource instead of
 * a copy per operation.
 */
export const finishDocument: TransformObject = (documentObject) => {
  const doc = (documentObject as unknown as { openapiObject: Json }).openapiObject;
  doc.components ??= {};
  const components = doc.components as Json;
  components.schemas ??= {};
  const schemas = components.schemas as Record<string, unknown>;
  // Components already there (Problem, added with app.addSchema) keep their names.
  const named = new Map(Object.entries(schemas).map(([name, schema]) => [name, JSON.stringify(schema)]));
  const lift = (node: unknown, root: boolean): unknown => {
    if (Array.isArray(node)) return node.map((n) => lift(n, false));
    if (!node || typeof node !== 'object') return node;
    const out: Json = {};
    for (const [k, v] of Object.entries(node)) out[k] = lift(v, false);
    if (root || typeof out.title !== 'string' || out.$ref !== undefined) return out;
    const text = JSON.stringify(out);
    const existing = named.get(out.title);
    if (existing === undefined) {
      named.set(out.title, text);
      schemas[out.title] = out;
    } else if (existing !== text) {
      return out; // another schema with the same title: stays inline rather than be misnamed
    }
    return { $ref: `#/components/schemas/${out.title}` };
  };
  doc.paths = lift(doc.paths, true);
  nameProblemResponses(doc.paths as Record<string, Record<string, Json>>, components);
  for (const [name, schema] of Object.entries(schemas)) schemas[name] = lift(schema, true);
  components.schemas = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
  return doc as never;
};
