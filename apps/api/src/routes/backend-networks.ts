import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { BackendNetworks, PathId, PutBackendNetworks } from '@slb/model';
import { AUTH_PROBLEMS, problems } from './shared.js';

// A tenant's allowed backend networks: admin only, as a tenant choosing its own would make the policy moot.
const tags = ['tenants'];
const params = Type.Object({ tenantId: PathId });
const config = { adminOnly: true };

export const backendNetworkRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const policy = app.services.backendPolicy;

  app.get('/tenants/:tenantId/backend-networks', {
    config,
    schema: {
      tags,
      operationId: 'getTenantBackendNetworks',
      params,
      response: { 200: BackendNetworks, ...problems(...AUTH_PROBLEMS, 403, 404) },
    },
    handler: (request) => policy.get(request.params.tenantId),
  });

  app.put('/tenants/:tenantId/backend-networks', {
    config: { ...config, writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'putTenantBackendNetworks',
      params,
      body: PutBackendNetworks,
      response: { 200: BackendNetworks, ...problems(...AUTH_PROBLEMS, 403, 404, 413, 415, 422) },
    },
    handler: (request) => policy.put(request.params.tenantId, request.body.networks),
  });
};
