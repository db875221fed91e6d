// What every process that exports Prometheus metrics shares (the nodes and the health worker): the plain
// families the forwarding path counts in, and the server that answers a scrape. Nothing here knows a node.
export { startMetricsServer } from './metrics-server.js';
export { CountSeries, PlainCounter, PlainFamily, PlainGauge, PlainHistogram } from './plain-metrics.js';
