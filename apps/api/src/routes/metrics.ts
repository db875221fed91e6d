import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { MetricsQuery, PathId, TrafficMetrics } from '@slb/model';
import { AUTH_PROBLEMS, LbParams, problems, scope } from './shared.js';

const LsnParams = Type.Object({ lbId: PathId, lsnId: PathId });

/** Traffic metrics (reads only: no write hook, nothing recompiled). 503 while their store is unreachable. */
export const metricsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/load-balancers/:lbId/metrics', {
    schema: {
      tags: ['load-balancers'],
      operationId: 'getLoadBalancerMetrics',
      params: LbParams,
      querystring: MetricsQuery,
      response: { 200: TrafficMetrics, ...problems(...AUTH_PROBLEMS, 404, 422, 503) },
    },
    handler: (request) => app.trafficMetrics.read(scope(request), request.params.lbId, null, request.query),
  });

  app.get('/load-balancers/:lbId/listeners/:lsnId/metrics', {
    schema: {
      tags: ['listeners'],
      operationId: 'getListenerMetrics',
      params: LsnParams,
      querystring: MetricsQuery,
      response: { 200: TrafficMetrics, ...problems(...AUTH_PROBLEMS, 404, 422, 503) },
    },
    handler: (request) =>
      app.trafficMetrics.read(scope(request), request.params.lbId, request.params.lsnId, request.query),
  });
};
