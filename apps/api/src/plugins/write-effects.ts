import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';

/**
 * What a successful write through a route may change beyond its own rows. Each write route under /v1
 * declares it (`config.writes`); the route, not a table of URLs elsewhere, knows what it touches.
 */
export interface WriteEffects {
  /**
   * What the nodes serve: the control hub recompiles, coalesced per tick (just the route's `:lbId` LB, or
   * the one the handler named in `request.writtenLbId`, when it has one). Default false.
   */
  nodes?: boolean;
  /**
   * The set of health-checked targets or their settings (listeners, their rules, servers joining or leaving
   * a group, a load balancer going away): the health checks are replanned. Planning reads every checked
   * listener and server, hundreds of ms of the event loop at fleet scale, so a weight change or a rename
   * must not ask for it. Default false.
   */
  healthTargets?: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Required on every /v1 write route (POST, PUT, PATCH, DELETE): see WriteEffects. `{}` for none. */
    writes?: WriteEffects;
  }
  interface FastifyRequest {
    /** The LB a write without `:lbId` in its path changed (a created LB), for onWrite; unset otherwise. */
    writtenLbId?: string;
  }
  interface FastifyInstance {
    /** The effects each /v1 write route declared, by `METHOD url`: for tests and for the curious. */
    writeEffects: ReadonlyMap<string, WriteEffects>;
  }
}

export interface WriteEffectsOptions {
  /** Called after each write answered below 400, when its route declared an effect. */
  onWrite(effects: WriteEffects, lbId: string | undefined): void;
}

const methodsOf = (route: RouteOptions) => (Array.isArray(route.method) ? route.method : [route.method]);
const hooksOf = <T>(hooks: T | T[] | undefined): T[] => (hooks ? (Array.isArray(hooks) ? hooks : [hooks]) : []);

/** The methods of a route that write, when it is an API route (/v1); none otherwise. */
export function apiWriteMethods(route: Pick<RouteOptions, 'method' | 'url'>): string[] {
  if (!route.url.startsWith('/v1/')) return [];
  return methodsOf(route as RouteOptions).filter((m) => m !== 'GET' && m !== 'HEAD');
}

/**
 * Reads each write route's declared effects when it is added, and acts on them after its successful
 * writes. A write route that declares nothing fails to register, so the app does not start: a new route
 * cannot forget. Reads (the hot path) get no hook at all.
 */
export const writeEffectsPlugin = fp<WriteEffectsOptions>(
  async (app, { onWrite }) => {
    const declared = new Map<string, WriteEffects>();
    app.decorate('writeEffects', declared);
    app.decorateRequest('writtenLbId', undefined);
    app.addHook('onRoute', (route) => {
      const methods = apiWriteMethods(route);
      if (methods.length === 0) return;
      const effects = route.config?.writes;
      if (!effects) {
        throw new Error(`${methods.join(',')} ${route.url}: a write route declares its effects (config.writes)`);
      }
      for (const method of methods) declared.set(`${method} ${route.url}`, effects);
      if (!effects.nodes && !effects.healthTargets) return;
      const afterWrite = (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
        const lbId = request.writtenLbId ?? (request.params as { lbId?: string } | undefined)?.lbId;
        if (reply.statusCode < 400) onWrite(effects, lbId);
        done();
      };
      route.onResponse = [...hooksOf(route.onResponse), afterWrite] as typeof route.onResponse;
    });
  },
  { name: 'write-effects' },
);
