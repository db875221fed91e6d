import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { CreateNode, ListQuery, Node, NodeJoinToken, NodePage, PathId, RegisteredNode, UpdateNode } from '@slb/model';
import { etagOf } from '../services/common.js';
import { AUTH_PROBLEMS, IfMatchHeaders, NoContent, problems, withEtag } from './shared.js';

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
    handler: async (request, reply) => {
      const row = await nodes.find(request.params.nodeId);
      return withEtag(reply, row.revision, nodes.view(row));
    },
  });

  app.patch('/nodes/:nodeId', {
    config: { ...config, writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'updateNode',
      params: NodeParams,
      headers: IfMatchHeaders,
      body: UpdateNode,
      response: { 200: Node, ...problems(...AUTH_PROBLEMS, 403, 404, 412, 413, 415) },
    },
    handler: async (request, reply) => {
      const row = await nodes.update(request.params.nodeId, request.body, request.headers['if-match']);
      return withEtag(reply, row.revision, nodes.view(row));
    },
  });

  app.post('/nodes', {
    config: { ...config, writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'registerNode',
      description: 'Registers a node; the join token in the answer is shown once.',
      body: CreateNode,
      response: { 201: RegisteredNode, ...problems(...AUTH_PROBLEMS, 403, 409, 413, 415, 422) },
    },
    // Not under Idempotency-Key: a replay would have to store the join token to return it again.
    handler: async (request, reply) => {
      reply.code(201).header('etag', etagOf(1));
      return nodes.register(request.body);
    },
  });

  app.post('/nodes/:nodeId/credentials', {
    config: { ...config, writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'rotateNodeCredential',
      description:
        'A new one-time join token for the node (shown once). Its current credential is revoked when the node uses it.',
      params: NodeParams,
      response: { 201: NodeJoinToken, ...problems(...AUTH_PROBLEMS, 403, 404) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return nodes.newJoinToken(request.params.nodeId);
    },
  });

  app.delete('/nodes/:nodeId', {
    config: { ...config, writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'deleteNode',
      description: 'Removes the node and revokes its credential; its session is closed at once.',
      params: NodeParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...problems(...AUTH_PROBLEMS, 403, 404, 412) },
    },
    handler: async (request, reply) => {
      await nodes.remove(request.params.nodeId, request.headers['if-match']);
      app.controlHub.disconnect(request.params.nodeId, 'node deleted');
      reply.code(204).send(null);
    },
  });
};
