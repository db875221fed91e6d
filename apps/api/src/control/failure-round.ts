import type { ListenerFailure } from '@slb/model';

/**
 * The failing listeners of a node that says `rotatesFailures`, gathered over its reports. A report names as
 * many as fit and counts the rest; such a node names the next ones in its next report, so one round of
 * ceil(failing / named) reports names every one. A listener stays failing here until two rounds' worth of
 * reports pass without it named (it healed, or it is gone: two, as reasons of other lengths make rounds of
 * other lengths); a report that names them all replaces everything.
 * Before, the controller saw the same first ~130 beat after beat, and the LBs of the others never turned
 * `provisioning`.
 */
export class FailureRound {
  private readonly seen = new Map<string, { reason: string; report: number }>();
  private reports = 0;
  private listed: ListenerFailure[] = [];

  /** The failures to act on after this report: every one gathered, and how many are still unnamed. */
  take(named: readonly ListenerFailure[], omitted: number): { failures: ListenerFailure[]; omitted: number } {
    this.reports++;
    if (omitted === 0) {
      this.seen.clear();
      for (const f of named) this.seen.set(f.listenerId, { reason: f.reason, report: this.reports });
      this.listed = [...named];
      return { failures: this.listed, omitted: 0 };
    }
    let changed = false;
    for (const f of named) {
      const before = this.seen.get(f.listenerId);
      if (before?.reason !== f.reason) changed = true;
      this.seen.set(f.listenerId, { reason: f.reason, report: this.reports });
    }
    const total = named.length + omitted;
    const round = Math.ceil(total / Math.max(1, named.length));
    for (const [id, entry] of this.seen) {
      if (this.reports - entry.report > 2 * round) {
        this.seen.delete(id);
        changed = true;
      }
    }
    if (changed) {
      this.listed = [...this.seen]
        .map(([listenerId, { reason }]) => ({ listenerId, reason }))
        .sort((a, b) => (a.listenerId < b.listenerId ? -1 : 1));
    }
    return { failures: this.listed, omitted: Math.max(0, total - this.listed.length) };
  }
}
