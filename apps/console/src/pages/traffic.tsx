import type { TrafficMetrics } from '@slb/model';
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { optionalJson } from '../api.js';
import type { ChartSeries } from '../components/chart.js';
import { usePoll } from '../router.js';
import type { Session } from '../session.js';

type ChartProps = { title: string; unit: string; timestamps: number[]; series: ChartSeries[] };

const RANGES = [
  { label: '15 min', seconds: 15 * 60, refresh: 10_000 },
  { label: '1 h', seconds: 3600, refresh: 30_000 },
  { label: '24 h', seconds: 24 * 3600, refresh: 120_000 },
] as const;

/** uPlot comes in its own chunk, fetched when a load balancer's page first draws a chart. */
let chartModule: Promise<ComponentType<ChartProps>> | null = null;
const loadChart = () => {
  chartModule ??= import('../components/chart.js').then((m) => m.default);
  return chartModule;
};

export function TrafficSection({ session, lbId, web }: { session: Session; lbId: string; web: boolean }) {
  const [range, setRange] = useState(0);
  const [metrics, setMetrics] = useState<TrafficMetrics | null | undefined>(undefined);
  const [Chart, setChart] = useState<ComponentType<ChartProps> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const r = RANGES[range] ?? RANGES[0];

  usePoll(
    async () => {
      const to = new Date();
      const from = new Date(to.getTime() - r.seconds * 1000);
      try {
        const m = await optionalJson<TrafficMetrics>(
          session.fetchJson(
            `/v1/load-balancers/${encodeURIComponent(lbId)}/metrics?from=${from.toISOString()}&to=${to.toISOString()}`,
          ),
        );
        setMetrics(m);
        setError(null);
      } catch (err) {
        setError(err instanceof Error ? err.message : String(err));
      }
    },
    r.refresh,
    [session, lbId, range],
  );
  useEffect(() => {
    if (metrics) void loadChart().then((c) => setChart(() => c));
  }, [metrics]);

  const hasPoints = metrics ? metrics.timestamps.length > 0 : false;
  return (
    <section aria-labelledby="traffic-title">
      <div class="title-row">
        <h2 id="traffic-title">Traffic</h2>
        <fieldset class="segmented">
          <legend class="sr-only">Time range</legend>
          {RANGES.map((x, i) => (
            <button key={x.label} type="button" aria-pressed={i === range} onClick={() => setRange(i)}>
              {x.label}
            </button>
          ))}
        </fieldset>
      </div>
      {error ? <p role="alert">Metrics could not be read: {error}</p> : null}
      {metrics === undefined ? <p class="muted">Loading…</p> : null}
      {metrics === null || (metrics && !hasPoints) ? (
        <p class="muted" data-testid="metrics-empty">
          No data yet: this API does not serve traffic metrics, or nothing was reported in this range.
        </p>
      ) : null}
      {metrics && hasPoints && Chart ? (
        <div class="charts" data-testid="charts">
          <Chart
            title="Active connections"
            unit="connections"
            timestamps={metrics.timestamps}
            series={[{ label: 'active', values: metrics.activeConnections, color: '#1f5fbf' }]}
          />
          <Chart
            title="New connections"
            unit="per second"
            timestamps={metrics.timestamps}
            series={[
              { label: 'new', values: metrics.newConnectionsPerSecond, color: '#1f7a3a' },
              { label: 'dropped', values: metrics.droppedConnectionsPerSecond, color: '#b3261e' },
            ]}
          />
          <Chart
            title="Throughput"
            unit="bytes per second"
            timestamps={metrics.timestamps}
            series={[
              { label: 'in', values: metrics.bytesInPerSecond, color: '#1f5fbf' },
              { label: 'out', values: metrics.bytesOutPerSecond, color: '#7a4bb3' },
            ]}
          />
          {web ? (
            <Chart
              title="Requests by status"
              unit="per second"
              timestamps={metrics.timestamps}
              series={[
                { label: '2xx', values: metrics.requestsPerSecond['2xx'], color: '#1f7a3a' },
                { label: '3xx', values: metrics.requestsPerSecond['3xx'], color: '#1f5fbf' },
                { label: '4xx', values: metrics.requestsPerSecond['4xx'], color: '#9a5b00' },
                { label: '5xx', values: metrics.requestsPerSecond['5xx'], color: '#b3261e' },
              ]}
            />
          ) : null}
          {web ? (
            <Chart
              title="Upstream time"
              unit="ms"
              timestamps={metrics.timestamps}
              series={[
                { label: 'p50', values: metrics.upstreamTimeP50Ms, color: '#1f5fbf' },
                { label: 'p99', values: metrics.upstreamTimeP99Ms, color: '#b3261e' },
              ]}
            />
          ) : null}
        </div>
      ) : null}
    </section>
  );
}
