import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

declare module 'fastify' {
  interface FastifyInstance {
    metricsRegistry: Registry;
  }
}

/** Decorates the app with its metrics registry, counting every request from here on. */
export const metricsPlugin = fp(
  async (app) => {
    app.decorate('metricsRegistry', installMetrics(app));
  },
  { name: 'metrics' },
);

/** Prometheus metrics for this app instance, on its own registry so several apps can live in one process. */
export function installMetrics(app: FastifyInstance): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'slb_api_' });
  const requests = new Counter({
    name: 'slb_api_http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'slb_api_http_request_duration_seconds',
    help: 'HTTP request latency',
    labelNames: ['method', 'route'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [registry],
  });
  // Label children resolved once per (method, route, status): label hashing per request was measurable.
  const children = new Map<string, { count: Counter.Internal; time: Histogram.Internal<string> }>();
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unknown';
    const key = `${request.method} ${route} ${reply.statusCode}`;
    let child = children.get(key);
    if (!child) {
      child = {
        count: requests.labels(request.method, route, String(reply.statusCode)),
        time: duration.labels(request.method, route),
      };
      if (children.size < 5000) children.set(key, child);
    }
    child.count.inc();
    child.time.observe(reply.elapsedTime / 1000);
    done();
  });
  return registry;
}
