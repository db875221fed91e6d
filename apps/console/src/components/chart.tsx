import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  label: string;
  values: (number | null)[];
  color: string;
}

/**
 * One uPlot chart (this module is loaded only on a load balancer's page, so the list stays light). The canvas
 * is drawn for the eye; its figure's caption and the table-less summary say the same for screen readers.
 */
export default function Chart(props: { title: string; unit: string; timestamps: number[]; series: ChartSeries[] }) {
  const ref = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = props.series.map((s) => s.label).join('|');
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: Math.max(280, el.clientWidth || 480),
      height: 180,
      legend: { show: true },
      scales: { x: { time: true } },
      axes: [{}, { size: 56, values: (_u, ticks) => ticks.map((t) => compact(t)) }],
      series: [{}, ...props.series.map((s) => ({ label: s.label, stroke: s.color, width: 1.5, spanGaps: false }))],
    };
    plot.current = new uPlot(opts, [props.timestamps, ...props.series.map((s) => s.values)] as uPlot.AlignedData, el);
    const resize = new ResizeObserver(() =>
      plot.current?.setSize({ width: Math.max(280, el.clientWidth), height: 180 }),
    );
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [shape]);
  useEffect(() => {
    plot.current?.setData([props.timestamps, ...props.series.map((s) => s.values)] as uPlot.AlignedData);
  }, [props.timestamps, props.series]);
  const latest = props.series
    .map((s) => `${s.label} ${compact([...s.values].reverse().find((v) => v !== null) ?? null)}`)
    .join(', ');
  return (
    <figure class="chart" data-chart={props.title}>
      <figcaption>
        {props.title} <span class="muted">({props.unit})</span>
      </figcaption>
      <div ref={ref} role="img" aria-label={`${props.title}, latest: ${latest}`} />
    </figure>
  );
}

function compact(v: number | null): string {
  if (v === null) return '–';
  const a = Math.abs(v);
  if (a >= 1e9) return `${(v / 1e9).toFixed(1)}G`;
  if (a >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (a >= 1e3) return `${(v / 1e3).toFixed(1)}k`;
  return Number.isInteger(v) ? String(v) : v.toFixed(2);
}
