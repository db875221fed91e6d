import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AddressPool, AddressPoolPage, CreateAddressPool, ListQuery, PathId } from '@slb/model';
import { AUTH_PROBLEMS, NoContent, problems } from './shared.js';

const tags = ['address-pools'];
const PoolParams = Type.Object({ poolId: PathId });
const config = { adminOnly: true };

export const addressPoolRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const pools = app.services.addressPools;

  app.get('/address-pools', {
    config,
    schema: {
      tags,
      operationId: 'listAddressPools',
      querystring: ListQuery,
      response: { 200: AddressPoolPage, ...problems(...AUTH_PROBLEMS, 403) },
    },
    handler: (request) => pools.list(request.query),
  });

  app.post('/address-pools', {
    // Health checks probe servers, never VIPs: pools leave the checked targets alone.
    config: { ...config, writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'createAddressPool',
      body: CreateAddressPool,
      response: { 201: AddressPool, ...problems(...AUTH_PROBLEMS, 403, 409, 413, 415, 422) },
    },
    handler: async (request, reply) => {
      const row = await pools.create(request.body);
      reply.code(201);
      return await pools.toApi(row);
    },
  });

  app.get('/address-pools/:poolId', {
    config,
    schema: {
      tags,
      operationId: 'getAddressPool',
      params: PoolParams,
      response: { 200: AddressPool, ...problems(...AUTH_PROBLEMS, 403, 404) },
    },
    handler: async (request) => pools.toApi(await pools.find(request.params.poolId)),
  });

  app.delete('/address-pools/:poolId', {
    config: { ...config, writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'deleteAddressPool',
      params: PoolParams,
      response: { 204: NoContent, ...problems(...AUTH_PROBLEMS, 403, 404, 409) },
    },
    handler: async (request, reply) => {
      await pools.remove(request.params.poolId);
      reply.code(204).send(null);
    },
  });
};
