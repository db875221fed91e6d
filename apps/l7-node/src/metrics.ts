import { PlainCounter, PlainFamily, PlainGauge, PlainHistogram } from '@slb/metrics-kit';
import { TrafficTally } from '@slb/node-runtime';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Every metric the L7 node exports, registered on one registry per app (tests build several). */
export function createMetrics(registry = new Registry()) {
  return {
    registry,
    /** Per-listener counters for the heartbeat's traffic summary (not exported to Prometheus). */
    traffic: new TrafficTally(),
    // Updated on every request: plain families (plain-metrics.ts).
    requests: new PlainCounter(
      'slb_l7_requests_total',
      'requests answered, by listener, backend (server id or "none") and status class',
      ['listener', 'backend', 'code'],
      registry,
    ),
    activeConnections: new Gauge({
      name: 'slb_l7_active_connections',
      help: 'open client connections',
      labelNames: ['listener'] as const,
      registers: [registry],
    }),
    connections: new Counter({
      name: 'slb_l7_connections_total',
      help: 'client connections accepted (from L4 nodes or direct)',
      labelNames: ['listener'] as const,
      registers: [registry],
    }),
    activeRequests: new PlainGauge('slb_l7_active_requests', 'requests in flight', ['listener'], registry),
    retries: new Counter({
      name: 'slb_l7_retries_total',
      help: 'requests retried on another backend',
      labelNames: ['listener'] as const,
      registers: [registry],
    }),
    retryBudgetExhausted: new Counter({
      name: 'slb_l7_retry_budget_exhausted_total',
      help: 'retries refused because the retry budget was spent',
      labelNames: ['listener'] as const,
      registers: [registry],
    }),
    ejections: new Counter({
      name: 'slb_l7_backend_ejections_total',
      help: 'backends taken out of rotation by passive health (consecutive connect failures)',
      labelNames: ['server_group', 'backend'] as const,
      registers: [registry],
    }),
    failOpen: new Counter({
      name: 'slb_l7_fail_open_total',
      help: 'requests sent to a group with no healthy backend, so spread over every positive-weight one',
      labelNames: ['server_group'] as const,
      registers: [registry],
    }),
    connectFailures: new Counter({
      name: 'slb_l7_backend_connect_failures_total',
      help: 'failed connections to backends',
      labelNames: ['server_group', 'backend'] as const,
      registers: [registry],
    }),
    proxyHeaderErrors: new Counter({
      name: 'slb_l7_proxy_header_errors_total',
      help: 'connections closed for a malformed, slow or missing PROXY v2 header',
      labelNames: ['listener', 'reason'] as const,
      registers: [registry],
    }),
    untrustedPeers: new Counter({
      name: 'slb_l7_untrusted_peer_connections_total',
      help: 'connections to a PROXY port from a peer that is not an L4 node of the fleet, closed unread',
      labelNames: ['listener'] as const,
      registers: [registry],
    }),
    tlsHandshakesRefused: new Counter({
      name: 'slb_l7_tls_handshakes_refused_total',
      help: 'https connections closed because the listener had its limit of TLS handshakes in flight',
      labelNames: ['listener'] as const,
      registers: [registry],
    }),
    clientErrors: new Counter({
      name: 'slb_l7_client_errors_total',
      help: 'client connections rejected for malformed HTTP (answered 400/431 and closed)',
      labelNames: ['listener', 'code'] as const,
      registers: [registry],
    }),
    backendDenied: new Counter({
      name: 'slb_l7_backend_denied_total',
      help: 'backends left out of a server group when it was configured: a cloud endpoint, a special address or a loop',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    aclRejections: new Counter({
      name: 'slb_l7_acl_rejections_total',
      help: 'client connections refused by the listener ACL',
      labelNames: ['listener'] as const,
      registers: [registry],
    }),
    upstreamLatency: new PlainHistogram(
      'slb_l7_upstream_latency_seconds',
      'time from dispatch to the backend response headers',
      ['listener', 'backend'],
      [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registry,
    ),
    listenerFailures: new Counter({
      name: 'slb_l7_listener_failures_total',
      help: 'listeners of an applied config that could not be built (bad certificate, unknown group, bind); the rest were applied',
      registers: [registry],
    }),
    // Every worker of a fleet binds (and fails) the same listeners: the node's count is the largest, not the sum.
    bindFailing: new Gauge({
      name: 'slb_l7_listeners_bind_failing',
      help: 'listeners that cannot bind now (port taken, address not on the host) and are being retried',
      registers: [registry],
      aggregator: 'max',
    }),
    bindRetries: new Counter({
      name: 'slb_l7_bind_retries_total',
      help: 'binds of failed listeners tried again, by result (bound: the listener serves from then on)',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    reloads: new Counter({
      name: 'slb_l7_config_reloads_total',
      help: 'config snapshots applied or refused',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** What the node still serves. */
export interface LiveLabels {
  listener(id: string): boolean;
  listenerBackend(listener: string, backend: string): boolean;
  groupBackend(group: string, backend: string): boolean;
}

/**
 * Removes the series of listeners and backends the node no longer serves: without it /metrics keeps one
 * set of series per listener and server ever configured, for the node's lifetime.
 */
export async function pruneSeries(metrics: Metrics, live: LiveLabels): Promise<number> {
  let removed = 0;
  for (const metric of Object.values(metrics)) {
    if (
      !(
        metric instanceof Counter ||
        metric instanceof Gauge ||
        metric instanceof Histogram ||
        metric instanceof PlainFamily
      )
    )
      continue;
    const { values } = await metric.get();
    const seen = new Set<string>();
    for (const v of values) {
      // Histogram buckets carry `le`, which is not one of the metric's own labels.
      const { le: _le, ...labels } = v.labels as Record<string, string | number | undefined>;
      const listener = labels.listener as string | undefined;
      const group = labels.server_group as string | undefined;
      const backend = labels.backend as string | undefined;
      const stale =
        (listener !== undefined && !live.listener(listener)) ||
        (listener !== undefined &&
          backend !== undefined &&
          backend !== 'none' &&
          !live.listenerBackend(listener, backend)) ||
        (group !== undefined && backend !== undefined && !live.groupBackend(group, backend));
      if (!stale) continue;
      const key = JSON.stringify(labels);
      if (seen.has(key)) continue;
      seen.add(key);
      (metric as { remove(labels: object): void }).remove(labels);
      removed++;
    }
  }
  return removed;
}
