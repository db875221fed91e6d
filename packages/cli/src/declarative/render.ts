import type { Plan, PlanListenerImpact } from '@slb/model';
import type { Change, Diff } from './diff.js';

export interface Paint {
  add(text: string): string;
  change(text: string): string;
  remove(text: string): string;
  dim(text: string): string;
}

const ANSI = (code: number) => (text: string) => `\x1b[${code}m${text}\x1b[0m`;
export const COLOURS: Paint = { add: ANSI(32), change: ANSI(33), remove: ANSI(31), dim: ANSI(2) };
export const PLAIN: Paint = { add: (t) => t, change: (t) => t, remove: (t) => t, dim: (t) => t };

const percent = (share: number) => `${(share * 100).toFixed(1)}%`;

/** The changes, one line each with the field changes under it, then what they do to live traffic. */
export function renderPlan(name: string, diff: Diff, plan: Plan | null, paint: Paint): string {
  const lines: string[] = [];
  if (diff.changes.length === 0) {
    lines.push(`No changes: load balancer ${name} matches the file.`);
  } else {
    lines.push(`Load balancer ${name}:`);
    for (const c of diff.changes) {
      const colour = c.action === '+' ? paint.add : c.action === '~' ? paint.change : paint.remove;
      lines.push(colour(`  ${c.action} ${c.what}`));
      for (const d of c.details) lines.push(paint.dim(`      ${d}`));
    }
  }
  for (const note of diff.notes) lines.push(`  ! ${note}`);
  const traffic = plan?.listeners ?? [];
  if (traffic.length > 0) {
    lines.push('', 'Traffic:');
    for (const l of traffic) lines.push(...renderImpact(l, paint));
  }
  if (diff.changes.length > 0) lines.push('', summary(diff.changes));
  return lines.join('\n');
}

export function summary(changes: Change[]): string {
  const count = (a: Change['action']) => changes.filter((c) => c.action === a).length;
  return `Plan: ${count('+')} to add, ${count('~')} to change, ${count('-')} to delete.`;
}

function renderImpact(l: PlanListenerImpact, paint: Paint): string[] {
  const head = `  listener ${l.protocol}:${l.port} → ${l.serverGroupId} (${l.scheduler})`;
  const lines: string[] = [];
  if (l.change === 'added') lines.push(`${head}: starts serving`);
  else if (l.change === 'removed') lines.push(paint.remove(`${head}: stops serving; every flow on it ends`));
  else {
    const how =
      l.method === 'maglev'
        ? 'of client flows hash to another backend (Maglev)'
        : 'of flows are on servers that stop taking new connections';
    lines.push(`${head}: ${percent(l.movedShare ?? 0)} ${how}`);
  }
  for (const s of l.servers) {
    const at = s.address.includes(':') ? `[${s.address}]:${s.port}` : `${s.address}:${s.port}`;
    const share = `${percent(s.shareBefore)} → ${percent(s.shareAfter)} of new flows`;
    if (!s.takesNewConnections && l.change !== 'removed') {
      const drain = s.drainSeconds !== null ? ` (drains for ${s.drainSeconds} s)` : '';
      lines.push(paint.remove(`      ${at} takes no new connections${drain}`));
    } else if (Math.abs(s.shareAfter - s.shareBefore) >= 0.0005) {
      lines.push(paint.dim(`      ${at}: ${share}`));
    }
  }
  return lines;
}
