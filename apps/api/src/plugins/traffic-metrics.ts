import { metricsKeyPrefixOf } from '@slb/model';
import fp from 'fastify-plugin';
import { registerTrafficIngestMetrics, TrafficIngest } from '../control/traffic-ingest.js';
import { TrafficMetricsReader } from '../services/traffic-metrics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Listeners' traffic from the 10 s buckets in Redis (GET …/metrics). */
    trafficMetrics: TrafficMetricsReader;
  }
}

export interface TrafficMetricsOptions {
  /** Prefix of the traffic metrics keys (SLB_METRICS_KEY_PREFIX); default `<cluster id>:metrics`. */
  metricsKeyPrefix?: string;
  /** The clock traffic metrics are bucketed and queried by (ms); default Date.now. Tests move it on. */
  metricsClock?: () => number;
}

/** Listeners' traffic: written from the nodes' heartbeats into Redis, read back by the metrics routes. */
export const trafficMetricsPlugin = fp<TrafficMetricsOptions>(
  async (app, options) => {
    const { redis } = app;
    const prefix = options.metricsKeyPrefix || metricsKeyPrefixOf(app.namespace.clusterId);
    if (redis) {
      // Never awaited by the hub, dropped while Redis is down.
      const ingest = new TrafficIngest(redis, prefix, app.log, options.metricsClock);
      app.controlHub.setTrafficSink((nodeId, report) => ingest.heartbeat(nodeId, report));
      registerTrafficIngestMetrics(app.metricsRegistry, ingest.stats);
    }
    const reader = new TrafficMetricsReader(app.data, app.services.loadBalancers, redis, prefix, options.metricsClock);
    app.decorate('trafficMetrics', reader);
  },
  { name: 'traffic-metrics', dependencies: ['database', 'redis', 'metrics', 'control-hub', 'services'] },
);
