import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { MetricsQuery, PathId, TrafficMetrics } from '@slb/model';
import { AUTH_PROBLEMS, LbParams, problems, scope } from './shared.js';

const LsnParams = Type.Object({ lbId: PathId, lsnId: PathId });

/**
 * Traffic metrics (reads only: no write hook, nothing recompiled). 503 while their store is unreachable.
 * The answer (up to 12 series of 8,640 points) is written by JSON.stringify, not by the schema's serializer:
 * fast-json-stringify checks every `number | null` item against both alternatives (anyOf), 3–5 times slower
 * on a 24 h answer at 10 s. The object is built field by field to the schema (TrafficMetricsReader), so
 * nothing extra can leak; the schema still documents and types it.
 */
export const metricsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/load-balancers/:lbId/metrics', {
    schema: {
      tags: ['load-balancers'],
      operationId: 'getLoadBalancerMetrics',
      params: LbParams,
      querystring: MetricsQuery,
      response: { 200: TrafficMetrics, ...problems(...AUTH_PROBLEMS, 404, 422, 503) },
    },
    handler: async (request, reply) => {
      const metrics = await app.trafficMetrics.read(scope(request), request.params.lbId, null, request.query);
      reply.serializer(JSON.stringify);
      return metrics;
    },
  });

  app.get('/load-balancers/:lbId/listeners/:lsnId/metrics', {
    schema: {
      tags: ['listeners'],
      operationId: 'getListenerMetrics',
      params: LsnParams,
      querystring: MetricsQuery,
      response: { 200: TrafficMetrics, ...problems(...AUTH_PROBLEMS, 404, 422, 503) },
    },
    handler: async (request, reply) => {
      const { lbId, lsnId } = request.params;
      const metrics = await app.trafficMetrics.read(scope(request), lbId, lsnId, request.query);
      reply.serializer(JSON.stringify);
      return metrics;
    },
  });
};
