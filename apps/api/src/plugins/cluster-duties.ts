import fp from 'fastify-plugin';
import { Redis } from 'ioredis';
import { ClusterDuties, dutiesLeaseKeyOf } from '../lease/duties.js';
import { registerLeaseMetrics } from '../lease/metrics.js';
import { RedisLease } from '../lease/redis-lease.js';
import { ClusterSignals } from '../lease/signals.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The deployment's once-only duties: plugins add theirs; they run while this process holds the lease. */
    duties: ClusterDuties;
    /** Signals between the deployment's API processes (register handlers before ready); null without Redis. */
    clusterSignals: ClusterSignals | null;
  }
}

export interface ClusterDutiesOptions {
  /** The Redis the lease lives in; absent: no lease, this process runs every duty. */
  redisUrl?: string;
  /** Time to live of the lease (ms) and this process's name in it; see RedisLeaseOptions for defaults. */
  lease?: { ttlMs?: number; holderId?: string; takeOver?: boolean };
}

/**
 * Registered before the plugins that add duties. The duties start once the app is ready (under the lease
 * when there is Redis) and stop before anything closes, then the lease is given back.
 */
export const clusterDutiesPlugin = fp<ClusterDutiesOptions>(
  async (app, { redisUrl, lease: leaseOptions }) => {
    // A connection of its own: renewals must not queue behind the traffic metrics' pipelines.
    const redis = redisUrl
      ? new Redis(redisUrl, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 })
      : null;
    redis?.on('error', () => {}); // the lease logs failed renewals; reconnects are ioredis' job
    const lease = redis
      ? new RedisLease({
          redis,
          key: dutiesLeaseKeyOf(app.namespace.clusterId),
          logger: app.log,
          ...leaseOptions,
        })
      : null;
    const duties = new ClusterDuties(lease, app.log);
    const signals =
      redis && redisUrl && lease
        ? new ClusterSignals(redis, redisUrl, app.namespace.clusterId, lease.holderId, app.log)
        : null;
    app.decorate('duties', duties);
    app.decorate('clusterSignals', signals);
    registerLeaseMetrics(app.metricsRegistry, duties);
    app.addHook('onReady', async () => {
      await redis?.connect().catch(() => {}); // unreachable: the lease keeps trying
      duties.begin();
      // Not waited for: with Redis away it subscribes once connected; until then the backstops cover.
      signals?.start().catch((err) => app.log.warn({ err: String(err) }, 'cluster signals not subscribed'));
    });
    app.addHook('preClose', async () => {
      await duties.end();
      signals?.close();
      redis?.disconnect();
    });
  },
  { name: 'cluster-duties', dependencies: ['database', 'metrics'] },
);
