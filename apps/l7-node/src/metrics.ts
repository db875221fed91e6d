import { PlainCounter, PlainFamily, PlainGauge, PlainHistogram, promMetrics } from '@slb/metrics-kit';
import { TrafficTally } from '@slb/node-runtime';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Every metric the L7 node exports, registered on one registry per app (tests build several). */
export function createMetrics(registry = new Registry()) {
  const prom = promMetrics(registry);
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
    activeConnections: prom.gauge('slb_l7_active_connections', 'open client connections', ['listener']),
    connections: prom.counter('slb_l7_connections_total', 'client connections accepted (from L4 nodes or direct)', [
      'listener',
    ]),
    activeRequests: new PlainGauge('slb_l7_active_requests', 'requests in flight', ['listener'], registry),
    retries: prom.counter('slb_l7_retries_total', 'requests retried on another backend', ['listener']),
    retryBudgetExhausted: prom.counter(
      'slb_l7_retry_budget_exhausted_total',
      'retries refused because the retry budget was spent',
      ['listener'],
    ),
    ejections: prom.counter(
      'slb_l7_backend_ejections_total',
      'backends taken out of rotation by passive health (consecutive connect failures)',
      ['server_group', 'backend'],
    ),
    failOpen: prom.counter(
      'slb_l7_fail_open_total',
      'requests sent to a group with no healthy backend, so spread over every positive-weight one',
      ['server_group'],
    ),
    connectFailures: prom.counter('slb_l7_backend_connect_failures_total', 'failed connections to backends', [
      'server_group',
      'backend',
    ]),
    proxyHeaderErrors: prom.counter(
      'slb_l7_proxy_header_errors_total',
      'connections closed for a malformed, slow or missing PROXY v2 header',
      ['listener', 'reason'],
    ),
    untrustedPeers: prom.counter(
      'slb_l7_untrusted_peer_connections_total',
      'connections to a PROXY port from a peer that is not an L4 node of the fleet, closed unread',
      ['listener'],
    ),
    tlsHandshakesRefused: prom.counter(
      'slb_l7_tls_handshakes_refused_total',
      'https connections closed because the listener had its limit of TLS handshakes in flight',
      ['listener'],
    ),
    clientErrors: prom.counter(
      'slb_l7_client_errors_total',
      'client connections rejected for malformed HTTP (answered 400/431 and closed)',
      ['listener', 'code'],
    ),
    backendDenied: prom.counter(
      'slb_l7_backend_denied_total',
      'backends left out of a server group when it was configured: a cloud endpoint, a special address or a loop',
      ['reason'],
    ),
    aclRejections: prom.counter('slb_l7_acl_rejections_total', 'client connections refused by the listener ACL', [
      'listener',
    ]),
    upstreamLatency: new PlainHistogram(
      'slb_l7_upstream_latency_seconds',
      'time from dispatch to the backend response headers',
      ['listener', 'backend'],
      [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registry,
    ),
    listenerFailures: prom.counter(
      'slb_l7_listener_failures_total',
      'listeners of an applied config that could not be built (bad certificate, unknown group, bind); the rest were applied',
    ),
    // Every worker of a fleet binds (and fails) the same listeners: the node's count is the largest, not the sum.
    bindFailing: prom.gauge(
      'slb_l7_listeners_bind_failing',
      'listeners that cannot bind now (port taken, address not on the host) and are being retried',
      [],
      { aggregator: 'max' },
    ),
    bindRetries: prom.counter(
      'slb_l7_bind_retries_total',
      'binds of failed listeners tried again, by result (bound: the listener serves from then on)',
      ['result'],
    ),
    backendStates: prom.gauge(
      'slb_l7_backend_states',
      'servers whose passive-health and load state the node keeps (per group and server), counted after each config',
      [],
      { aggregator: 'max' },
    ),
    reloads: prom.counter('slb_l7_config_reloads_total', 'config snapshots applied or rejected', ['result']),
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
