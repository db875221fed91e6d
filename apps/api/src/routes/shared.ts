import { type TSchema, Type } from '@sinclair/typebox';
import { PathId, Problem } from '@slb/model';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiProblem } from '../errors.js';
import { scopeOf } from '../services/auth.js';
import type { Scope } from '../services/common.js';
import { etagOf } from '../services/common.js';

/** The problem+json responses a route can give, for the OpenAPI document and the serializer. */
export function problems(...statuses: number[]) {
  const response = {
    description: 'problem details (RFC 9457)',
    content: { 'application/problem+json': { schema: Type.Unsafe<ApiProblem>({ $ref: `${PROBLEM_SCHEMA_ID}#` }) } },
  };
  return Object.fromEntries(statuses.map((s) => [s, response]));
}
/** Registered once with app.addSchema: one `components.schemas.Problem` in the OpenAPI document. */
export const PROBLEM_SCHEMA_ID = 'Problem';
export const ProblemSchema: TSchema = { ...Problem, $id: PROBLEM_SCHEMA_ID };
/** Every authenticated route can answer these. */
export const AUTH_PROBLEMS = [400, 401, 429] as const;

export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ maxLength: 200, description: 'ETag from a previous read; 412 if stale' })),
});
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({ maxLength: 255, description: 'a retried create with the same key returns the first result' }),
  ),
});

export const LbParams = Type.Object({ lbId: PathId });
export const NoContent = Type.Null({ description: 'deleted' });

export const scope = (request: FastifyRequest): Scope => scopeOf(request.auth);

/** Sends the ETag of a resource read or written. */
export function withEtag<T>(reply: FastifyReply, revision: number, body: T): T {
  reply.header('etag', etagOf(revision));
  return body;
}

/** A create: 201 with ETag, run at most once per Idempotency-Key. */
export async function created<T>(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  make: () => { body: T; revision?: number } | Promise<{ body: T; revision?: number }>,
): Promise<T> {
  const key = request.headers['idempotency-key'];
  const fingerprint = `${request.method} ${request.routeOptions.url} ${JSON.stringify(request.params)} ${JSON.stringify(request.body)}`;
  const result = await app.idempotency.run(
    request.auth.tenantId,
    typeof key === 'string' ? key : undefined,
    fingerprint,
    async () => {
      const { body, revision } = await make();
      const headers: Record<string, string> = revision === undefined ? {} : { etag: etagOf(revision) };
      return { status: 201, body, headers };
    },
  );
  reply.code(result.status).headers(result.headers);
  if (result.replayed) reply.header('idempotent-replayed', 'true');
  return result.body as T;
}
