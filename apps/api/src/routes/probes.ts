import type { FastifyPluginAsync } from 'fastify';

export interface ProbeOptions {
  /** Echoed as the `slb-instance` header of /healthz (the local cloud's readiness check); default: none. */
  instanceId?: string;
}

/** Liveness, readiness and Prometheus metrics: outside /v1, no token, not in the OpenAPI document. */
export const probeRoutes: FastifyPluginAsync<ProbeOptions> = async (app, { instanceId }) => {
  const { store, redis } = app;
  app.get('/healthz', { schema: { hide: true } }, (_request, reply) => {
    if (instanceId) void reply.header('slb-instance', instanceId);
    return { status: 'ok' };
  });
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const checks: Record<string, string> = {};
    try {
      store.sqlite.prepare('SELECT 1').get();
      checks.database = 'ok';
    } catch {
      checks.database = 'unreachable';
    }
    if (redis) {
      try {
        if (redis.status === 'wait' || redis.status === 'end') await redis.connect().catch(() => {});
        await Promise.race([redis.ping(), new Promise((_, reject) => setTimeout(reject, 1000).unref())]);
        checks.redis = 'ok';
      } catch {
        checks.redis = 'unreachable';
      }
    }
    const ready = Object.values(checks).every((v) => v === 'ok');
    reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', checks });
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(app.metricsRegistry.contentType).send(await app.metricsRegistry.metrics());
  });
};
