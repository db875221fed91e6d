// What every process that exports Prometheus metrics shares (the nodes and the health worker): the plain
// families the forwarding path counts in, prom-client's constructors bound to a registry, and the server
// that answers a scrape. Nothing here knows a node.
export { startMetricsServer } from './metrics-server.js';
export { CountSeries, PlainCounter, PlainFamily, PlainGauge, PlainHistogram } from './plain-metrics.js';
export { type GaugeOptions, type PromMetrics, promMetrics } from './prom-metrics.js';
