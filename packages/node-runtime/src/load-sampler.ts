import type { NodeLoadReport } from '@slb/model';
import type { Registry } from 'prom-client';

/** The node's own metrics its heartbeat load is read from, each summed over all its series. */
export interface LoadMetricNames {
  /** A gauge of open connections. */
  readonly active: string;
  /** A counter of accepted connections (its rate is newConnectionsPerSecond). */
  readonly connections: string;
  /** A counter of requests served (its rate is requestsPerSecond); absent on nodes without requests. */
  readonly requests?: string;
}

/** The load a node reports in its heartbeats, sampled once a second from its own metrics. */
export class LoadSampler {
  current: NodeLoadReport = { activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 };
  private last = { at: Date.now(), connections: 0, requests: 0 };
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly registry: Registry,
    private readonly names: LoadMetricNames,
    intervalMs = 1000,
  ) {
    this.timer = setInterval(() => void this.sample(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async sum(name: string | undefined): Promise<number> {
    const metric = name === undefined ? undefined : this.registry.getSingleMetric(name);
    if (!metric) return 0;
    const { values } = await metric.get();
    return values.reduce((acc, v) => acc + v.value, 0);
  }

  /** Samples now (the timer calls it each interval). */
  async sample(): Promise<NodeLoadReport> {
    const active = await this.sum(this.names.active);
    const connections = await this.sum(this.names.connections);
    const requests = await this.sum(this.names.requests);
    const now = Date.now();
    const per = 1000 / Math.max(1, now - this.last.at);
    // Series of removed listeners leave the registry, so a total can shrink: a rate is never negative.
    this.current = {
      activeConnections: Math.max(0, Math.round(active)),
      newConnectionsPerSecond: Math.max(0, (connections - this.last.connections) * per),
      requestsPerSecond: Math.max(0, (requests - this.last.requests) * per),
    };
    this.last = { at: now, connections, requests };
    return this.current;
  }
}
