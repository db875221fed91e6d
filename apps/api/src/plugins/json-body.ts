import type { FastifyInstance } from 'fastify';

/**
 * JSON bodies, where an empty one counts as no body. curl tours and clients with a default
 * `content-type: application/json` header send it on DELETE and POST …/start|stop too; fastify's own
 * parser refuses those with "Body cannot be empty". A route that needs a body still refuses an absent one
 * through its schema (400, `/body` is required), so nothing that was refused for a reason gets through.
 * Everything else is fastify's parser, with its proto- and constructor-poisoning checks and body limit.
 */
export function installJsonBody(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text === '') return done(null, undefined);
    // biome-ignore lint/nursery/noFloatingPromises: the callback form; it answers through `done`
    parse(request, text, done);
  });
}
