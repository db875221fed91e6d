import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';

/**
 * Requests that arrive while the API shuts down (pipelined, or on a keep-alive connection still busy when
 * close began) are answered 503 problem+json through the error handler, so they carry a request id and
 * the security headers like every other answer. Fastify's own `return503OnClosing` writes a bare JSON 503
 * that bypasses both; it is turned off in app.ts in favour of this.
 */
export function installDrain(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) return done();
    reply.header('connection', 'close');
    done(new ApiError('not_ready', 'the API is shutting down; retry'));
  });
}
