import { databaseUnavailable } from '@slb/db';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, type ApiProblem, type ErrorCode, problem } from '../errors.js';
import { REQUEST_ID_HEADER } from './request-id.js';
import { setSecurityHeaders } from './security-headers.js';
import { fieldErrors } from './validation.js';

/** Fastify's own error codes, each answered with one of ours. */
export const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'bad_request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'bad_request',
};

/** Every error leaves as problem+json; 5xx bodies say nothing about internals. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | ApiError, request, reply) => {
    let body: ApiProblem;
    if (err instanceof ApiError) {
      body = problem(err.code, err.detail, err.errors, err.quota);
    } else if ('validation' in err && err.validation) {
      const part = err.validationContext ?? 'body';
      const errors = fieldErrors(part, err.validation as never);
      body = problem('validation_failed', errors.map((e) => `${e.path} ${e.message}`).join('; '), errors);
    } else if (err.code && FASTIFY_CODES[err.code]) {
      body = problem(FASTIFY_CODES[err.code]!, err.message);
    } else if (err instanceof SyntaxError || err.statusCode === 400) {
      body = problem('bad_request', 'request body is not valid JSON');
    } else if (err.statusCode === 415) {
      body = problem('unsupported_media_type', err.message);
    } else if (err.statusCode === 413) {
      body = problem('payload_too_large', err.message);
    } else if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      body = problem('bad_request', err.message);
    } else if (databaseUnavailable(err)) {
      // A PostgreSQL restarting or out of reach: the request is fine and worth sending again (with its
      // Idempotency-Key), which a 500 does not say.
      request.log.warn({ err }, 'database unreachable');
      body = problem('not_ready', 'the database is unreachable; retry');
      reply.header('retry-after', '1');
    } else {
      request.log.error({ err }, 'unhandled error');
      body = problem('internal', 'internal error; the server log has the details under this request id');
    }
    // The one handle an operator needs to find the error log line (logged with the same id as reqId).
    if (body.status >= 500) body = { ...body, requestId: request.id };
    if (body.status === 401) reply.header('www-authenticate', 'Bearer realm="slb"');
    reply.code(body.status).type('application/problem+json').send(body);
  });

  app.setNotFoundHandler((request, reply) => {
    reply
      .code(404)
      .type('application/problem+json')
      .send(problem('not_found', `no route ${request.method} ${request.url.split('?')[0]}`));
  });
}

/**
 * URLs the router refuses before any route or hook runs (bad percent-encoding, a path parameter over the
 * router's length limit): bad input like any other, so a 400 problem+json rather than fastify's own JSON.
 */
export function answerFrameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const detail =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a path parameter is too long' : 'the URL is not validly percent-encoded';
  // No onSend hook runs for these answers: the headers every response carries are set here.
  setSecurityHeaders(request, reply);
  reply.header(REQUEST_ID_HEADER, request.id);
  reply.code(400).type('application/problem+json').send(problem('bad_request', detail));
}
