import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { Certificate, CertificatePage, CreateCertificate, ListQuery, PathId } from '@slb/model';
import { toCertificate } from '../services/certificates.js';
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

const tags = ['certificates'];
const CertParams = Type.Object({ certId: PathId });

export const certificateRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const certs = app.services.certificates;

  app.get('/certificates', {
    schema: {
      tags,
      operationId: 'listCertificates',
      querystring: ListQuery,
      response: { 200: CertificatePage, ...problems(...AUTH_PROBLEMS) },
    },
    handler: (request) => certs.list(scope(request), request.query),
  });

  app.post('/certificates', {
    config: { writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'createCertificate',
      headers: IdempotencyHeaders,
      body: CreateCertificate,
      response: { 201: Certificate, ...problems(...AUTH_PROBLEMS, 409, 413, 415, 422) },
    },
    handler: (request, reply) =>
      created(app, request, reply, async () => {
        const row = await certs.create(request.auth, request.body);
        return { body: toCertificate(row), revision: row.revision };
      }),
  });

  app.get('/certificates/:certId', {
    schema: {
      tags,
      operationId: 'getCertificate',
      params: CertParams,
      response: { 200: Certificate, ...problems(...AUTH_PROBLEMS, 404) },
    },
    handler: async (request, reply) => {
      const row = await certs.find(scope(request), request.params.certId);
      return withEtag(reply, row.revision, toCertificate(row));
    },
  });

  app.delete('/certificates/:certId', {
    config: { writes: { nodes: true } },
    schema: {
      tags,
      operationId: 'deleteCertificate',
      params: CertParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...problems(...AUTH_PROBLEMS, 404, 409, 412) },
    },
    handler: async (request, reply) => {
      await certs.remove(scope(request), request.params.certId, request.headers['if-match']);
      reply.code(204).send(null);
    },
  });
};
