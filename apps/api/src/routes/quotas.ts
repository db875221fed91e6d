import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { PathId, TenantQuotas, UpdateTenantQuotas } from '@slb/model';
import { notFound } from '../errors.js';
import { AUTH_PROBLEMS, problems } from './shared.js';

const tags = ['quotas'];
const TenantParams = Type.Object({ tenantId: PathId });

export const quotaRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const quotas = app.services.quotas;

  app.get('/quotas', {
    schema: {
      tags,
      operationId: 'getQuotas',
      summary: "The caller's own tenant's quotas: limit and usage of each",
      response: { 200: TenantQuotas, ...problems(...AUTH_PROBLEMS) },
    },
    handler: (request) => quotas.get(request.auth.tenantId),
  });

  app.get('/tenants/:tenantId/quotas', {
    schema: {
      tags,
      operationId: 'getTenantQuotas',
      summary: "A tenant's quotas: limit and usage of each (admin, or a member for its own tenant)",
      params: TenantParams,
      response: { 200: TenantQuotas, ...problems(...AUTH_PROBLEMS, 404) },
    },
    handler: async (request) => {
      const { tenantId } = request.params;
      // Another tenant is not found, as any other tenant's resource is for a member.
      if (request.auth.role !== 'admin' && tenantId !== request.auth.tenantId) throw notFound('tenant', tenantId);
      return quotas.get(tenantId);
    },
  });

  app.patch('/tenants/:tenantId/quotas', {
    config: { adminOnly: true, writes: {} },
    schema: {
      tags,
      operationId: 'updateTenantQuotas',
      summary: "Overrides a tenant's quotas (admin only); null puts one back to the deployment default",
      params: TenantParams,
      body: UpdateTenantQuotas,
      response: { 200: TenantQuotas, ...problems(...AUTH_PROBLEMS, 403, 404, 413, 415) },
    },
    handler: (request) => quotas.update(request.params.tenantId, request.body),
  });
};
