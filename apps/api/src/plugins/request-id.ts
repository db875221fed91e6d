import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';

export const REQUEST_ID_HEADER = 'x-request-id';

/** A client's own id is kept only when it cannot smuggle anything into a header or a log line. */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Fastify's `genReqId`: the client's `x-request-id` when short and safe (so a caller can correlate its
 * own logs), else a fresh UUID. Fastify puts it in every log line of the request as `reqId`.
 */
export function requestId(req: IncomingMessage): string {
  const supplied = req.headers[REQUEST_ID_HEADER];
  return typeof supplied === 'string' && SAFE_REQUEST_ID.test(supplied) ? supplied : randomUUID();
}

/** Every response names its request id, so a 5xx can be matched to the server's error log line. */
export function installRequestIdHeader(app: FastifyInstance): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    done(null, payload);
  });
}
