import fp from 'fastify-plugin';
import { EventStore, type EventStoreOptions } from '../events/store.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The load balancers' events (GET /v1/load-balancers/{lbId}/events). */
    events: EventStore;
  }
}

export type EventStorePluginOptions = EventStoreOptions & {
  /** Milliseconds between pruning runs. Default 60,000. */
  pruneIntervalMs?: number;
};

export const eventStorePlugin = fp<EventStorePluginOptions>(
  async (app, { pruneIntervalMs, ...options }) => {
    const events = new EventStore(app.data, { logger: app.log, ...options });
    app.decorate('events', events);
    // Pruning deletes from the shared database: once for the deployment, not once per API process.
    app.duties.add({
      name: 'event-pruning',
      start: () => events.startPruning(pruneIntervalMs ?? 60_000),
      stop: () => events.stopPruning(),
    });
    // Before the database closes (its plugin's onClose runs last): what is queued is written.
    app.addHook('onClose', async () => {
      await events.close();
    });
  },
  { name: 'event-store', dependencies: ['database', 'cluster-duties'] },
);
