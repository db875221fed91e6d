/** A status as a word with a color, never a color alone (WCAG 1.4.1); colors meet 4.5:1 on their background. */
const TONE: Record<string, string> = {
  normal: 'good',
  active: 'good',
  running: 'good',
  online: 'good',
  converged: 'good',
  abnormal: 'bad',
  offline: 'bad',
  stopped: 'muted',
  unavailable: 'muted',
  provisioning: 'warn',
  pending: 'warn',
};

export function Status({ value, label }: { value: string; label?: string }) {
  return (
    <span class={`status ${TONE[value] ?? 'muted'}`} data-status={value}>
      {label ?? value}
    </span>
  );
}

/** A tiny SVG line of a series (nulls skipped), for list rows: no chart library per row. */
export function Sparkline({ values, label }: { values: (number | null)[]; label: string }) {
  const points = values.map((v, i) => [i, v] as const).filter((p): p is readonly [number, number] => p[1] !== null);
  if (points.length < 2) return <span class="muted">no data yet</span>;
  const max = Math.max(1e-9, ...points.map((p) => p[1]));
  const w = 80;
  const h = 20;
  const last = values.length - 1 || 1;
  const d = points.map(([i, v]) => `${((i / last) * w).toFixed(1)},${(h - 1 - (v / max) * (h - 2)).toFixed(1)}`);
  return (
    <svg class="spark" width={w} height={h} viewBox={`0 0 ${w} ${h}`} role="img" aria-label={label}>
      <polyline points={d.join(' ')} fill="none" stroke="currentColor" stroke-width="1.5" />
    </svg>
  );
}
