import fp from 'fastify-plugin';
import { HealthScheduler, TransitionConsumer } from '../health/index.js';
import { registerTransitionMetrics } from '../health/transition-metrics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Plans the checks onto BullMQ from the database; null without Redis (no health checks then). */
    healthScheduler: HealthScheduler | null;
  }
}

export interface HealthChecksOptions {
  /** The Redis of the health-check fleet; absent: no checks are scheduled nor transitions read. */
  redisUrl?: string;
}

/** The health-check fleet: checks scheduled on BullMQ from the database, transitions stored and pushed. */
export const healthChecksPlugin = fp<HealthChecksOptions>(
  async (app, { redisUrl }) => {
    const { store, namespace, events } = app;
    const hub = app.controlHub;
    const healthScheduler = redisUrl
      ? new HealthScheduler({ db: store.db, redisUrl, queue: namespace.healthQueue, logger: app.log })
      : null;
    const transitions = redisUrl
      ? new TransitionConsumer({
          db: store.db,
          redisUrl,
          keyPrefix: namespace.healthKeyPrefix,
          logger: app.log,
          events,
          onTransition: (message) => hub.healthChanged(message.listenerId),
        })
      : null;
    app.decorate('healthScheduler', healthScheduler);
    if (transitions) registerTransitionMetrics(app.metricsRegistry, transitions.stats);
    app.addHook('onReady', async () => {
      await transitions
        ?.start()
        .catch((err) => app.log.warn({ err: String(err) }, 'health transitions: Redis unreachable'));
      healthScheduler?.requestSync();
    });
    app.addHook('onClose', async () => {
      await transitions?.close();
      await healthScheduler?.close();
    });
  },
  { name: 'health-checks', dependencies: ['database', 'event-store', 'control-hub', 'metrics'] },
);
