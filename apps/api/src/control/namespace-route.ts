import { type DeploymentNamespace, NAMESPACE_PATH } from '@slb/model';
import type { FastifyInstance } from 'fastify';

/**
 * Where the health workers (pointed at the API with SLB_API_URL) learn the deployment's Redis names, so no
 * operator has to choose and copy them. No token: the names say nothing a Redis client could not list,
 * and a worker has no credential. Outside /v1 and the OpenAPI document, as the other node-facing routes.
 */
export function installNamespaceRoute(app: FastifyInstance, namespace: DeploymentNamespace): void {
  app.get(NAMESPACE_PATH, { schema: { hide: true } }, async (_request, reply) => {
    reply.header('cache-control', 'no-store').send(namespace);
  });
}
