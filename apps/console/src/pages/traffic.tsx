import type { TrafficMetrics } from '@slb/model';
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { messageOf, optionalJson } from '../api.js';
import type { ChartSeries } from '../components/chart.js';
import { usePoll } from '../router.js';
import type { Session } from '../session.js';

type ChartProps = { title: string; unit: string; timestamps: number[]; series: ChartSeries[] };

const RANGES = [
  { label: '15 min', seconds: 15 * 60, refresh: 10_000 },
  { label: '1 h', seconds: 3600, refresh: 30_000 },
  { label: '24 h', seconds: 24 * 3600, refresh: 120_000 },
] as const;

/** One palette for all charts, so a color means the same everywhere: red the bad series (dropped, 5xx, p99), green the good. */
const COLOR = { blue: '#1f5fbf', green: '#1f7a3a', red: '#b3261e', purple: '#7a4bb3', amber: '#9a5b00' };

/** The charts of the traffic section, in order; `webOnly` ones need an HTTP(S) listener to have data. */
const CHARTS: { title: string; unit: string; webOnly?: boolean; series: (m: TrafficMetrics) => ChartSeries[] }[] = [
  {
    title: 'Active connections',
    unit: 'connections',
    series: (m) => [{ label: 'active', values: m.activeConnections, color: COLOR.blue }],
  },
  {
    title: 'New connections',
    unit: 'per second',
    series: (m) => [
      { label: 'new', values: m.newConnectionsPerSecond, color: COLOR.green },
      { label: 'dropped', values: m.droppedConnectionsPerSecond, color: COLOR.red },
    ],
  },
  {
    title: 'Throughput',
    unit: 'bytes per second',
    series: (m) => [
      { label: 'in', values: m.bytesInPerSecond, color: COLOR.blue },
      { label: 'out', values: m.bytesOutPerSecond, color: COLOR.purple },
    ],
  },
  {
    title: 'Requests by status',
    unit: 'per second',
    webOnly: true,
    series: (m) => [
      { label: '2xx', values: m.requestsPerSecond['2xx'], color: COLOR.green },
      { label: '3xx', values: m.requestsPerSecond['3xx'], color: COLOR.blue },
      { label: '4xx', values: m.requestsPerSecond['4xx'], color: COLOR.amber },
      { label: '5xx', values: m.requestsPerSecond['5xx'], color: COLOR.red },
    ],
  },
  {
    title: 'Upstream time',
    unit: 'ms',
    webOnly: true,
    series: (m) => [
      { label: 'p50', values: m.upstreamTimeP50Ms, color: COLOR.blue },
      { label: 'p99', values: m.upstreamTimeP99Ms, color: COLOR.red },
    ],
  },
];

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
        setError(messageOf(err));
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
          {CHARTS.filter((c) => web || !c.webOnly).map((c) => (
            <Chart
              key={c.title}
              title={c.title}
              unit={c.unit}
              timestamps={metrics.timestamps}
              series={c.series(metrics)}
            />
          ))}
        </div>
      ) : null}
    </section>
  );
}
