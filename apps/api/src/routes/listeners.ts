import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { CreateListener, Listener, ListenerPage, ListQuery, PathId, UpdateListener } from '@slb/model';
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

const tags = ['listeners'];
const LsnParams = Type.Object({ lbId: PathId, lsnId: PathId });

export const listenerRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const listeners = app.services.listeners;

  app.get('/load-balancers/:lbId/listeners', {
    schema: {
      tags,
      operationId: 'listListeners',
      params: LbParams,
      querystring: ListQuery,
      response: { 200: ListenerPage, ...problems(...AUTH_PROBLEMS, 404) },
    },
    handler: (request) => listeners.list(scope(request), request.params.lbId, request.query),
  });

  app.post('/load-balancers/:lbId/listeners', {
    config: { writes: { nodes: true, healthTargets: true } },
    schema: {
      tags,
      operationId: 'createListener',
      params: LbParams,
      headers: IdempotencyHeaders,
      body: CreateListener,
      response: { 201: Listener, ...problems(...AUTH_PROBLEMS, 404, 409, 413, 415, 422) },
    },
    handler: (request, reply) =>
      created(app, request, reply, async () => {
        const row = await listeners.create(scope(request), request.params.lbId, request.body);
        return { body: await listeners.toApi(row), revision: row.revision };
      }),
  });

  app.get('/load-balancers/:lbId/listeners/:lsnId', {
    schema: {
      tags,
      operationId: 'getListener',
      params: LsnParams,
      response: { 200: Listener, ...problems(...AUTH_PROBLEMS, 404) },
    },
    handler: async (request, reply) => {
      const row = await listeners.find(scope(request), request.params.lbId, request.params.lsnId);
      return withEtag(reply, row.revision, await listeners.toApi(row));
    },
  });

  app.patch('/load-balancers/:lbId/listeners/:lsnId', {
    config: { writes: { nodes: true, healthTargets: true } },
    schema: {
      tags,
      operationId: 'updateListener',
      params: LsnParams,
      headers: IfMatchHeaders,
      body: UpdateListener,
      response: { 200: Listener, ...problems(...AUTH_PROBLEMS, 404, 409, 412, 413, 415, 422) },
    },
    handler: async (request, reply) => {
      const { lbId, lsnId } = request.params;
      const row = await listeners.update(scope(request), lbId, lsnId, request.body, request.headers['if-match']);
      return withEtag(reply, row.revision, await listeners.toApi(row));
    },
  });

  app.delete('/load-balancers/:lbId/listeners/:lsnId', {
    config: { writes: { nodes: true, healthTargets: true } },
    schema: {
      tags,
      operationId: 'deleteListener',
      params: LsnParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...problems(...AUTH_PROBLEMS, 404, 412) },
    },
    handler: async (request, reply) => {
      await listeners.remove(scope(request), request.params.lbId, request.params.lsnId, request.headers['if-match']);
      return reply.code(204).send(null);
    },
  });

  for (const [action, status] of [
    ['start', 'running'],
    ['stop', 'stopped'],
  ] as const) {
    app.post(`/load-balancers/:lbId/listeners/:lsnId/${action}`, {
      config: { writes: { nodes: true, healthTargets: true } },
      schema: {
        tags,
        operationId: `${action}Listener`,
        params: LsnParams,
        response: { 200: Listener, ...problems(...AUTH_PROBLEMS, 404) },
      },
      handler: async (request, reply) => {
        const row = await listeners.setStatus(scope(request), request.params.lbId, request.params.lsnId, status);
        return withEtag(reply, row.revision, await listeners.toApi(row));
      },
    });
  }
};
