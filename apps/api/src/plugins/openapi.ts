import swagger from '@fastify/swagger';
import fp from 'fastify-plugin';
import { describeRoute, finishDocument } from '../openapi/document.js';
import { TAGS } from '../openapi/operations.js';
import { ProblemSchema } from '../routes/shared.js';

/** The OpenAPI document of the routes registered after it (GET /openapi.json, the generated client). */
export const openApiPlugin = fp(
  async (app) => {
    await app.register(swagger, {
      // Shared schemas become components named by their $id.
      refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
      transform: describeRoute,
      transformObject: finishDocument,
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'SLB control plane API',
          version: '1.0.0',
          description: 'Load balancers, listeners, server groups, certificates, ACLs, nodes and tenants.',
          // No license yet: the project has not chosen one (see redocly.yaml).
          contact: { name: 'SLB maintainers' },
        },
        tags: TAGS.map((tag) => ({ ...tag })),
        servers: [{ url: 'http://127.0.0.1:8080' }],
        components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
        security: [{ bearer: [] }],
      },
    });
    app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
    app.addSchema(ProblemSchema);
  },
  { name: 'openapi' },
);
