import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  CreateLoadBalancer,
  ListLoadBalancersQuery,
  LoadBalancer,
  LoadBalancerHealth,
  LoadBalancerPage,
  UpdateLoadBalancer,
} from '@slb/model';
import {
  AUTH_PROBLEMS,
  created,
  IdempotencyHeaders,
  IfMatchHeaders,
  LbParams,
  NoContent,
  problems,
  scope,
  withEtag,
} from './shared.js';

const tags = ['load-balancers'];

export const loadBalancerRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const lbs = app.services.loadBalancers;

  app.get('/load-balancers', {
    schema: {
      tags,
      operationId: 'listLoadBalancers',
      querystring: ListLoadBalancersQuery,
      response: { 200: LoadBalancerPage, ...problems(...AUTH_PROBLEMS) },
    },
    handler: (request) => lbs.list(scope(request), request.query),
  });

  app.post('/load-balancers', {
    // A new load balancer has no listener yet: nothing to check.
    config: { writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'createLoadBalancer',
      headers: IdempotencyHeaders,
      body: CreateLoadBalancer,
      response: { 201: LoadBalancer, ...problems(...AUTH_PROBLEMS, 409, 413, 415, 422) },
    },
    handler: (request, reply) =>
      created(app, request, reply, async () => {
        const row = await lbs.create(request.auth, request.body);
        // No :lbId in the path: named here, so the hub compiles this LB alone rather than the fleet.
        request.writtenLbId = row.id;
        return { body: await lbs.toApi(row), revision: row.revision };
      }),
  });

  app.get('/load-balancers/:lbId', {
    schema: {
      tags,
      operationId: 'getLoadBalancer',
      params: LbParams,
      response: { 200: LoadBalancer, ...problems(...AUTH_PROBLEMS, 404) },
    },
    handler: async (request, reply) => {
      const row = await lbs.find(scope(request), request.params.lbId);
      return withEtag(reply, row.revision, await lbs.toApi(row));
    },
  });

  app.patch('/load-balancers/:lbId', {
    config: { writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'updateLoadBalancer',
      params: LbParams,
      headers: IfMatchHeaders,
      body: UpdateLoadBalancer,
      response: { 200: LoadBalancer, ...problems(...AUTH_PROBLEMS, 404, 412, 413, 415, 422) },
    },
    handler: async (request, reply) => {
      const row = await lbs.update(scope(request), request.params.lbId, request.body, request.headers['if-match']);
      return withEtag(reply, row.revision, await lbs.toApi(row));
    },
  });

  app.delete('/load-balancers/:lbId', {
    config: { writes: { nodes: true, healthTargets: true } },
    schema: {
      tags,
      operationId: 'deleteLoadBalancer',
      params: LbParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...problems(...AUTH_PROBLEMS, 404, 409, 412) },
    },
    handler: async (request, reply) => {
      await lbs.remove(scope(request), request.params.lbId, request.headers['if-match']);
      return reply.code(204).send(null);
    },
  });

  app.get('/load-balancers/:lbId/health', {
    schema: {
      tags,
      operationId: 'getLoadBalancerHealth',
      params: LbParams,
      response: { 200: LoadBalancerHealth, ...problems(...AUTH_PROBLEMS, 404) },
    },
    handler: async (request) => ({
      items: await app.services.health.forLoadBalancer(scope(request), request.params.lbId),
    }),
  });
};
