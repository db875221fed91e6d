import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { Acl, AclPage, CreateAcl, ListQuery, PathId, UpdateAcl } from '@slb/model';
import { toAcl } from '../services/acls.js';
import {
  AUTH_PROBLEMS,
  created,
  IdempotencyHeaders,
  IfMatchHeaders,
  NoContent,
  problems,
  scope,
  withEtag,
} from './shared.js';

const tags = ['acls'];
const AclParams = Type.Object({ aclId: PathId });

export const aclRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const acls = app.services.acls;

  app.get('/acls', {
    schema: {
      tags,
      operationId: 'listAcls',
      querystring: ListQuery,
      response: { 200: AclPage, ...problems(...AUTH_PROBLEMS) },
    },
    handler: (request) => acls.list(scope(request), request.query),
  });

  app.post('/acls', {
    config: { writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'createAcl',
      headers: IdempotencyHeaders,
      body: CreateAcl,
      response: { 201: Acl, ...problems(...AUTH_PROBLEMS, 409, 413, 415, 422) },
    },
    handler: (request, reply) =>
      created(app, request, reply, async () => {
        const row = await acls.create(request.auth, request.body);
        return { body: toAcl(row), revision: row.revision };
      }),
  });

  app.get('/acls/:aclId', {
    schema: {
      tags,
      operationId: 'getAcl',
      params: AclParams,
      response: { 200: Acl, ...problems(...AUTH_PROBLEMS, 404) },
    },
    handler: async (request, reply) => {
      const row = await acls.find(scope(request), request.params.aclId);
      return withEtag(reply, row.revision, toAcl(row));
    },
  });

  app.patch('/acls/:aclId', {
    config: { writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'updateAcl',
      params: AclParams,
      headers: IfMatchHeaders,
      body: UpdateAcl,
      response: { 200: Acl, ...problems(...AUTH_PROBLEMS, 404, 409, 412, 413, 415, 422) },
    },
    handler: async (request, reply) => {
      const row = await acls.update(scope(request), request.params.aclId, request.body, request.headers['if-match']);
      return withEtag(reply, row.revision, toAcl(row));
    },
  });

  app.delete('/acls/:aclId', {
    config: { writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'deleteAcl',
      params: AclParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...problems(...AUTH_PROBLEMS, 404, 409, 412) },
    },
    handler: async (request, reply) => {
      await acls.remove(scope(request), request.params.aclId, request.headers['if-match']);
      reply.code(204).send(null);
    },
  });
};
