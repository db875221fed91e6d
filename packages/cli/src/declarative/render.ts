import { hostPort, type Plan, type PlanListenerImpact, type PlanOperation } from '@slb/model';
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
export function renderPlan(
  name: string,
  diff: Diff,
  plan: Plan | null,
  paint: Paint,
  groupNames: ReadonlyMap<string, string> = new Map(),
): string {
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
    for (const l of traffic) lines.push(...renderImpact(l, paint, groupNames));
  }
  if (diff.changes.length > 0) lines.push('', summary(diff.changes));
  return lines.join('\n');
}

const count = (changes: Change[], a: Change['action']) => changes.filter((c) => c.action === a).length;

export function summary(changes: Change[]): string {
  return `Plan: ${count(changes, '+')} to add, ${count(changes, '~')} to change, ${count(changes, '-')} to delete.`;
}

export function appliedSummary(changes: Change[]): string {
  return `Applied: ${count(changes, '+')} added, ${count(changes, '~')} changed, ${count(changes, '-')} deleted.`;
}

/**
 * Server group names by id, for the traffic lines: the live groups, and those the plan would create (the
 * dry run gave them ids that the real create will not reuse, so only the plan's own answer knows them).
 */
export function groupNamesOf(
  live: { id: string; name: string }[],
  operations: PlanOperation[],
  plan: Plan | null,
): Map<string, string> {
  const names = new Map(live.map((g) => [g.id, g.name]));
  for (const result of plan?.operations ?? []) {
    const op = operations[result.index];
    if (op?.op === 'createServerGroup' && result.id) names.set(result.id, op.body.name);
  }
  return names;
}

function renderImpact(l: PlanListenerImpact, paint: Paint, groupNames: ReadonlyMap<string, string>): string[] {
  const head = `  listener ${l.protocol}:${l.port} → ${groupNames.get(l.serverGroupId) ?? l.serverGroupId} (${l.scheduler})`;
  const lines: string[] = [];
  if (l.change === 'added') return [`${head}: starts serving`];
  else if (l.change === 'removed') lines.push(paint.remove(`${head}: stops serving; every flow on it ends`));
  else {
    const how =
      l.method === 'maglev'
        ? 'of client flows hash to another backend (Maglev)'
        : 'of flows are on servers that stop taking new connections';
    lines.push(`${head}: ${percent(l.movedShare ?? 0)} ${how}`);
  }
  for (const s of l.servers) {
    const at = hostPort(s.address, s.port);
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
