import fp from 'fastify-plugin';
import { HealthScheduler, TransitionConsumer } from '../health/index.js';
import { registerTransitionMetrics } from '../health/transition-metrics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Plans the checks onto BullMQ from the database; null without Redis (no health checks then). */
    healthScheduler: HealthScheduler | null;
    /**
     * After a write that changed the health-checked targets: the schedule is synced by the lease holder, this
     * process or, told over Redis, another one.
     */
    requestHealthSync(): void;
  }
}

export interface HealthChecksOptions {
  /** The Redis of the health-check fleet; absent: no checks are scheduled nor transitions read. */
  redisUrl?: string;
}

/** The health-check fleet: checks scheduled on BullMQ from the database, transitions stored and pushed. */
export const healthChecksPlugin = fp<HealthChecksOptions>(
  async (app, { redisUrl }) => {
    const { data, namespace, events } = app;
    const { controlHub: hub, clusterSignals: signals } = app;
    const healthScheduler = redisUrl
      ? new HealthScheduler({
          store: data,
          redisUrl,
          queue: namespace.healthQueue,
          logger: app.log,
          autoStart: false, // under the cluster-duties lease
        })
      : null;
    const transitions = redisUrl
      ? new TransitionConsumer({
          store: data,
          redisUrl,
          keyPrefix: namespace.healthKeyPrefix,
          logger: app.log,
          events,
          onTransition: (message) => {
            hub.healthChanged(message.listenerId);
            signals?.send('health-changed', message.listenerId); // the other replicas' nodes
          },
        })
      : null;
    app.decorate('healthScheduler', healthScheduler);
    app.decorate('requestHealthSync', () => {
      healthScheduler?.requestSync(); // a no-op unless this process holds the lease
      if (!app.duties.held) signals?.send('health-sync');
    });
    signals?.on('health-sync', () => healthScheduler?.requestSync());
    signals?.on('health-changed', (listenerId) => hub.healthChanged(listenerId));
    if (transitions) registerTransitionMetrics(app.metricsRegistry, transitions.stats);
    // Once per deployment, under the lease: one process writes the schedule, so two never race with plans
    // read at different moments; one consumes the stream, taking over what a dead holder left unacked.
    if (healthScheduler) {
      app.duties.add({
        name: 'health-schedule-sync',
        start: () => healthScheduler.start(),
        stop: () => healthScheduler.stop(),
      });
    }
    if (transitions) {
      app.duties.add({
        name: 'health-transitions',
        start: () => transitions.start({ claimIdleMs: 0 }),
        stop: () => transitions.stop(),
      });
    }
    app.addHook('onClose', async () => {
      await transitions?.close();
      await healthScheduler?.close();
    });
  },
  { name: 'health-checks', dependencies: ['database', 'event-store', 'control-hub', 'metrics', 'cluster-duties'] },
);
