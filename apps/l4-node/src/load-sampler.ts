import type { NodeLoadReport } from '@slb/model';
import type { Registry } from 'prom-client';

/** The load a node reports in its heartbeats, sampled once a second from its own metrics. */
export class LoadSampler {
  current: NodeLoadReport = { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 };
  private lastTotal = 0;
  private lastAt = Date.now();

  constructor(
    private readonly registry: Registry,
    intervalMs = 1000,
  ) {
    setInterval(() => void this.sample(), intervalMs).unref();
  }

  private async sum(name: string): Promise<number> {
    const metric = this.registry.getSingleMetric(name);
    if (!metric) return 0;
    const { values } = await metric.get();
    return values.reduce((acc, v) => acc + v.value, 0);
  }

  private async sample(): Promise<void> {
    const active = await this.sum('slb_l4_connections_active');
    const total = await this.sum('slb_l4_connections_total');
    const now = Date.now();
    const rate = ((total - this.lastTotal) * 1000) / Math.max(1, now - this.lastAt);
    this.lastTotal = total;
    this.lastAt = now;
    this.current = {
      activeConnections: Math.max(0, Math.round(active)),
      newConnectionsPerSecond: Math.max(0, rate),
      requestsPerSecond: 0,
    };
  }
}
