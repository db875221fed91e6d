import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  AddedServers,
  AddServers,
  CreateServerGroup,
  ListQuery,
  PathId,
  Server,
  ServerGroup,
  ServerGroupPage,
  UpdateServer,
  UpdateServerGroup,
} from '@slb/model';
import { toServer } from '../services/server-groups.js';
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

const tags = ['server-groups'];
const SgParams = Type.Object({ lbId: PathId, sgId: PathId });
const SrvParams = Type.Object({ lbId: PathId, sgId: PathId, srvId: PathId });

export const serverGroupRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const groups = app.services.serverGroups;

  app.get('/load-balancers/:lbId/server-groups', {
    schema: {
      tags,
      operationId: 'listServerGroups',
      params: LbParams,
      querystring: ListQuery,
      response: { 200: ServerGroupPage, ...problems(...AUTH_PROBLEMS, 404) },
    },
    handler: (request) => groups.list(scope(request), request.params.lbId, request.query),
  });

  app.post('/load-balancers/:lbId/server-groups', {
    // A new group is empty and no listener uses it yet: nothing new to check.
    config: { writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'createServerGroup',
      params: LbParams,
      headers: IdempotencyHeaders,
      body: CreateServerGroup,
      response: { 201: ServerGroup, ...problems(...AUTH_PROBLEMS, 404, 409, 413, 415, 422) },
    },
    handler: (request, reply) =>
      created(app, request, reply, async () => {
        const row = await groups.create(scope(request), request.params.lbId, request.body);
        return { body: await groups.toApi(row), revision: row.revision };
      }),
  });

  app.get('/load-balancers/:lbId/server-groups/:sgId', {
    schema: {
      tags,
      operationId: 'getServerGroup',
      params: SgParams,
      response: { 200: ServerGroup, ...problems(...AUTH_PROBLEMS, 404) },
    },
    handler: async (request, reply) => {
      const row = await groups.find(scope(request), request.params.lbId, request.params.sgId);
      return withEtag(reply, row.revision, await groups.toApi(row));
    },
  });

  app.patch('/load-balancers/:lbId/server-groups/:sgId', {
    config: { writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'updateServerGroup',
      params: SgParams,
      headers: IfMatchHeaders,
      body: UpdateServerGroup,
      response: { 200: ServerGroup, ...problems(...AUTH_PROBLEMS, 404, 412, 413, 415) },
    },
    handler: async (request, reply) => {
      const { lbId, sgId } = request.params;
      const row = await groups.update(scope(request), lbId, sgId, request.body, request.headers['if-match']);
      return withEtag(reply, row.revision, await groups.toApi(row));
    },
  });

  app.delete('/load-balancers/:lbId/server-groups/:sgId', {
    config: { writes: { nodes: true, healthTargets: true } },
    schema: {
      tags,
      operationId: 'deleteServerGroup',
      params: SgParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...problems(...AUTH_PROBLEMS, 404, 409, 412) },
    },
    handler: async (request, reply) => {
      await groups.remove(scope(request), request.params.lbId, request.params.sgId, request.headers['if-match']);
      return reply.code(204).send(null);
    },
  });

  app.post('/load-balancers/:lbId/server-groups/:sgId/servers', {
    config: { writes: { nodes: true, healthTargets: true } },
    schema: {
      tags,
      operationId: 'addServers',
      params: SgParams,
      headers: IdempotencyHeaders,
      body: AddServers,
      response: { 201: AddedServers, ...problems(...AUTH_PROBLEMS, 404, 409, 413, 415, 422) },
    },
    handler: (request, reply) =>
      created(app, request, reply, async () => {
        const rows = await groups.addServers(
          scope(request),
          request.params.lbId,
          request.params.sgId,
          request.body.servers,
        );
        return { body: { items: rows.map(toServer) } };
      }),
  });

  app.get('/load-balancers/:lbId/server-groups/:sgId/servers/:srvId', {
    schema: {
      tags,
      operationId: 'getServer',
      params: SrvParams,
      response: { 200: Server, ...problems(...AUTH_PROBLEMS, 404) },
    },
    handler: async (request, reply) => {
      const { lbId, sgId, srvId } = request.params;
      const row = await groups.findServer(scope(request), lbId, sgId, srvId);
      return withEtag(reply, row.revision, toServer(row));
    },
  });

  app.patch('/load-balancers/:lbId/server-groups/:sgId/servers/:srvId', {
    // A weight, a name or tags: the same targets are checked, so no replanning.
    config: { writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'updateServer',
      params: SrvParams,
      headers: IfMatchHeaders,
      body: UpdateServer,
      response: { 200: Server, ...problems(...AUTH_PROBLEMS, 404, 412, 413, 415, 422) },
    },
    handler: async (request, reply) => {
      const { lbId, sgId, srvId } = request.params;
      const row = await groups.updateServer(
        scope(request),
        lbId,
        sgId,
        srvId,
        request.body,
        request.headers['if-match'],
      );
      return withEtag(reply, row.revision, toServer(row));
    },
  });

  app.delete('/load-balancers/:lbId/server-groups/:sgId/servers/:srvId', {
    config: { writes: { nodes: true, healthTargets: true } },
    schema: {
      tags,
      operationId: 'deleteServer',
      params: SrvParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...problems(...AUTH_PROBLEMS, 404, 412) },
    },
    handler: async (request, reply) => {
      const { lbId, sgId, srvId } = request.params;
      await groups.removeServer(scope(request), lbId, sgId, srvId, request.headers['if-match']);
      return reply.code(204).send(null);
    },
  });
};
