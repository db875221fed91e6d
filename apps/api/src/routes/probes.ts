import type { Store } from '@slb/db';
import { sql } from 'drizzle-orm';
import type { FastifyPluginAsync } from 'fastify';

/** Whether the database answers a query within `timeoutMs` (a PostgreSQL that hangs counts as unreachable). */
export async function databaseReachable(store: Store, timeoutMs = 1000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    const answered = store
      .read((q) => store.rows(q, sql`SELECT 1 AS one`))
      .then(
        () => true,
        () => false,
      );
    return await Promise.race([answered, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export interface ProbeOptions {
  /** Echoed as the `slb-instance` header of /healthz (the local cloud's readiness check); default: none. */
  instanceId?: string;
}

/** Liveness, readiness and Prometheus metrics: outside /v1, no token, not in the OpenAPI document. */
export const probeRoutes: FastifyPluginAsync<ProbeOptions> = async (app, { instanceId }) => {
  const { data, redis } = app;
  app.get('/healthz', { schema: { hide: true } }, (_request, reply) => {
    if (instanceId) void reply.header('slb-instance', instanceId);
    return { status: 'ok' };
  });
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const checks: Record<string, string> = {};
    checks.database = (await databaseReachable(data)) ? 'ok' : 'unreachable';
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
