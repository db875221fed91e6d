import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { CreatedToken, CreateTenant, CreateToken, ListQuery, PathId, Tenant, TenantPage, TokenPage } from '@slb/model';
import { AUTH_PROBLEMS, created, IdempotencyHeaders, NoContent, problems } from './shared.js';

const tags = ['tenants'];
const TenantParams = Type.Object({ tenantId: PathId });
const TokenParams = Type.Object({ tenantId: PathId, tokenId: PathId });
const config = { adminOnly: true };

export const tenantRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const tenants = app.services.tenants;

  app.get('/tenants', {
    config,
    schema: {
      tags,
      operationId: 'listTenants',
      querystring: ListQuery,
      response: { 200: TenantPage, ...problems(...AUTH_PROBLEMS, 403) },
    },
    handler: (request) => tenants.list(request.query),
  });

  app.post('/tenants', {
    config: { ...config, writes: {} },
    schema: {
      tags,
      operationId: 'createTenant',
      headers: IdempotencyHeaders,
      body: CreateTenant,
      response: { 201: Tenant, ...problems(...AUTH_PROBLEMS, 403, 413, 415, 422) },
    },
    handler: (request, reply) =>
      created(app, request, reply, async () => ({ body: await tenants.create(request.body) })),
  });

  app.get('/tenants/:tenantId', {
    config,
    schema: {
      tags,
      operationId: 'getTenant',
      params: TenantParams,
      response: { 200: Tenant, ...problems(...AUTH_PROBLEMS, 403, 404) },
    },
    handler: (request) => tenants.get(request.params.tenantId),
  });

  app.get('/tenants/:tenantId/tokens', {
    config,
    schema: {
      tags,
      operationId: 'listTokens',
      params: TenantParams,
      querystring: ListQuery,
      response: { 200: TokenPage, ...problems(...AUTH_PROBLEMS, 403, 404) },
    },
    handler: (request) => tenants.listTokens(request.params.tenantId, request.query),
  });

  // Not idempotent on purpose: replaying the response would mean storing the secret to replay it.
  app.post('/tenants/:tenantId/tokens', {
    config: { ...config, writes: {} },
    schema: {
      tags,
      operationId: 'createToken',
      params: TenantParams,
      body: CreateToken,
      response: { 201: CreatedToken, ...problems(...AUTH_PROBLEMS, 403, 404, 413, 415) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return tenants.createToken(request.params.tenantId, request.body);
    },
  });

  app.delete('/tenants/:tenantId/tokens/:tokenId', {
    config: { ...config, writes: {} },
    schema: {
      tags,
      operationId: 'deleteToken',
      params: TokenParams,
      response: { 204: NoContent, ...problems(...AUTH_PROBLEMS, 403, 404) },
    },
    handler: async (request, reply) => {
      await tenants.revokeToken(request.params.tenantId, request.params.tokenId);
      reply.code(204).send(null);
    },
  });
};
