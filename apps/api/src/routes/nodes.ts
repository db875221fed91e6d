import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ListQuery, Node, NodePage, PathId, UpdateNode } from '@slb/model';
import { toNode } from '../services/nodes.js';
import { AUTH_PROBLEMS, IfMatchHeaders, problems, withEtag } from './shared.js';

const tags = ['nodes'];
const NodeParams = Type.Object({ nodeId: PathId });
const config = { adminOnly: true };

export const nodeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const nodes = app.services.nodes;

  app.get('/nodes', {
    config,
    schema: {
      tags,
      operationId: 'listNodes',
      querystring: ListQuery,
      response: { 200: NodePage, ...problems(...AUTH_PROBLEMS, 403) },
    },
    handler: (request) => nodes.list(request.query),
  });

  app.get('/nodes/:nodeId', {
    config,
    schema: {
      tags,
      operationId: 'getNode',
      params: NodeParams,
      response: { 200: Node, ...problems(...AUTH_PROBLEMS, 403, 404) },
    },
    handler: (request, reply) => {
      const row = nodes.find(request.params.nodeId);
      return withEtag(reply, row.revision, toNode(row));
    },
  });

  app.patch('/nodes/:nodeId', {
    config,
    schema: {
      tags,
      operationId: 'updateNode',
      params: NodeParams,
      headers: IfMatchHeaders,
      body: UpdateNode,
      response: { 200: Node, ...problems(...AUTH_PROBLEMS, 403, 404, 412, 413, 415) },
    },
    handler: (request, reply) => {
      const row = nodes.update(request.params.nodeId, request.body, request.headers['if-match']);
      return withEtag(reply, row.revision, toNode(row));
    },
  });
};
