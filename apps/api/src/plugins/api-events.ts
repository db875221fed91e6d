import fp from 'fastify-plugin';
import { apiEventHooks, recordsApiEvents } from '../events/api-events.js';
import { apiWriteMethods } from './write-effects.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A write route that changes nothing that stays (a plan: run, then rolled back): no api event recorded. */
    dryRun?: boolean;
  }
}

const hooksOf = <T>(hooks: T | T[] | undefined): T[] => (hooks ? (Array.isArray(hooks) ? hooks : [hooks]) : []);

/** Writes under /v1/load-balancers are recorded as the LB's `api` events (see events/api-events.ts). */
export const apiEventsPlugin = fp(
  async (app) => {
    app.addHook('onRoute', (route) => {
      const methods = apiWriteMethods(route);
      if (methods.length === 0 || !recordsApiEvents(route.url, methods, route.config?.dryRun)) return;
      const operationId = (route.schema as { operationId?: string } | undefined)?.operationId;
      const { preHandler, preSerialization, onSend } = apiEventHooks(app.data, app.events, operationId);
      if (preHandler) route.preHandler = [...hooksOf(route.preHandler), preHandler] as typeof route.preHandler;
      route.preSerialization = [...hooksOf(route.preSerialization), preSerialization] as typeof route.preSerialization;
      route.onSend = [...hooksOf(route.onSend), onSend] as typeof route.onSend;
    });
  },
  { name: 'api-events', dependencies: ['database', 'event-store'] },
);
