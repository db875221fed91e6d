import fp from 'fastify-plugin';
import { ApiError } from '../errors.js';
import type { AuthContext } from '../services/auth.js';
import { RateLimiter } from '../services/rate-limiter.js';

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext;
  }
  interface FastifyContextConfig {
    /** Route is for admin tokens only (cluster-wide resources). */
    adminOnly?: boolean;
  }
}

export interface AuthOptions {
  /** Requests per second (and burst) each token, or each address without one, may make; absent: no limit. */
  rateLimit?: { rps: number; burst: number };
}

/** Every /v1 request carries a bearer token, within its rate; admin-only routes want an admin's. */
export const authPlugin = fp<AuthOptions>(
  async (app, { rateLimit }) => {
    const limiter = rateLimit && rateLimit.rps > 0 ? new RateLimiter(rateLimit.rps, rateLimit.burst) : null;
    app.decorateRequest('auth', null as unknown as AuthContext);
    app.addHook('onRequest', async (request, reply) => {
      // The router decodes the path, so `/%761/nodes` reaches a /v1 route: the route decides, not the raw URL.
      const guarded = request.url.startsWith('/v1/') || request.routeOptions.url?.startsWith('/v1/') === true;
      if (!guarded) return;
      const header = request.headers.authorization;
      const match = header ? /^Bearer\s+(\S+)$/i.exec(header) : null;
      const auth = match?.[1] ? await app.authenticator.authenticate(match[1]) : null;
      const wait = limiter?.take(auth ? auth.tokenId : `ip:${request.ip}`) ?? 0;
      if (wait > 0) {
        reply.header('retry-after', String(wait));
        throw new ApiError('rate_limited', `too many requests; retry in ${wait} s`);
      }
      if (!auth) throw new ApiError('unauthorized', 'a valid bearer token is required');
      if (request.routeOptions.config?.adminOnly && auth.role !== 'admin') {
        throw new ApiError('forbidden', 'this route needs an admin token');
      }
      request.auth = auth;
    });
  },
  { name: 'auth', dependencies: ['services'] },
);
