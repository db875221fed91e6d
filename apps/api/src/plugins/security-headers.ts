import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * The API serves JSON only, so the strictest browser policy costs nothing: no script, style, frame or
 * plugin may load from a response, and no page may frame one. The console's routes name their own policy.
 */
const HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-resource-policy': 'same-origin',
};

/**
 * Security headers on every response, errors and 404s included. /v1 responses may carry secrets (a token
 * shown once, certificate metadata, tenants' configuration), so no cache, shared or private, may keep them.
 */
export function installSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    setSecurityHeaders(request, reply);
    done(null, payload);
  });
}

/** Also called where fastify answers before any hook runs (a URL the router refuses). */
export function setSecurityHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.headers(HEADERS);
  const csp = request.routeOptions.config?.contentSecurityPolicy;
  if (csp) reply.header('content-security-policy', csp);
  // The route, not the raw URL, decides: the router decodes the path, so `/%761/…` is a /v1 route too.
  const v1 = request.url.startsWith('/v1/') || request.routeOptions.url?.startsWith('/v1/') === true;
  if (v1) reply.header('cache-control', 'no-store');
  reply.removeHeader('x-powered-by');
  reply.removeHeader('server');
}
