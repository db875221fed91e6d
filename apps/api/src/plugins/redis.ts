import fp from 'fastify-plugin';
import { Redis } from 'ioredis';

declare module 'fastify' {
  interface FastifyInstance {
    /** The API's own Redis client (readiness, traffic metrics); null when the API runs without Redis. */
    redis: Redis | null;
  }
}

export interface RedisOptions {
  /** When set, readiness also requires this Redis to answer. */
  redisUrl?: string;
}

export const redisPlugin = fp<RedisOptions>(
  async (app, { redisUrl }) => {
    const redis = redisUrl
      ? new Redis(redisUrl, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 })
      : null;
    redis?.on('error', () => {}); // readiness reports it; reconnects are ioredis' job
    app.decorate('redis', redis);
    // Connected now, not at the first readiness check: heartbeats write through it from the start.
    app.addHook('onReady', async () => {
      redis?.connect().catch(() => {});
    });
    app.addHook('onClose', async () => redis?.disconnect());
  },
  { name: 'redis' },
);
