import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EventsQuery, LoadBalancerEventPage } from '@slb/model';
import { AUTH_PROBLEMS, LbParams, problems, scope } from './shared.js';

export const eventRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/load-balancers/:lbId/events', {
    schema: {
      tags: ['load-balancers'],
      operationId: 'listLoadBalancerEvents',
      params: LbParams,
      querystring: EventsQuery,
      response: { 200: LoadBalancerEventPage, ...problems(...AUTH_PROBLEMS, 404) },
    },
    handler: async (request) => {
      // Another tenant's LB, or one deleted (its events went with it): 404.
      const lb = await app.services.loadBalancers.find(scope(request), request.params.lbId);
      return await app.events.list(lb.id, request.query);
    },
  });
};
