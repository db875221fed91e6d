import type { FastifyBaseLogger } from 'fastify';
import fp from 'fastify-plugin';
import { installDrain } from './drain.js';
import { installErrorHandling } from './errors.js';
import { installJsonBody } from './json-body.js';
import { installRequestIdHeader } from './request-id.js';
import { installSecurityHeaders } from './security-headers.js';
import { installValidation } from './validation.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** This route's Content-Security-Policy in place of the API's `default-src 'none'` (the console's pages). */
    contentSecurityPolicy?: string;
  }
}

export interface HttpOptions {
  /** The app's logger: one access-log line per request when it logs at info or below; none otherwise. */
  logger?: FastifyBaseLogger;
}

/** How every request is read and every answer written: JSON bodies, validation, problems, headers, drain. */
export const httpPlugin = fp<HttpOptions>(
  async (app, { logger }) => {
    // JSON only: a text/plain body is 415, not a string that fails validation.
    app.removeContentTypeParser('text/plain');
    installJsonBody(app);
    installValidation(app);
    installErrorHandling(app);
    installSecurityHeaders(app);
    installRequestIdHeader(app);
    installDrain(app);

    // Access log: one line per request, only when info is on (the hook is not even installed otherwise).
    // The path only: a query string is client-controlled text, and a client that puts its token there
    // (?access_token=…) must not have it written to the log.
    if (logger && ['trace', 'debug', 'info'].includes(logger.level)) {
      app.addHook('onResponse', (request, reply, done) => {
        const path = request.url.split('?', 1)[0];
        request.log.info(
          { method: request.method, url: path, status: reply.statusCode, ms: reply.elapsedTime },
          'request',
        );
        done();
      });
    }
  },
  { name: 'http' },
);
