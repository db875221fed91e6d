import type { ListenerFailure } from '@slb/model';
import type { SnapshotChange } from './control-channel-options.js';

/** Failures named in one ack at most (bounded like the message; the node logs every one). */
const MAX_REPORTED_FAILURES = 1000;

/**
 * The listeners of the applied config the node does not serve as sent, as the acks and heartbeats report
 * them: refused here (their config was unreadable) or failed in the node's apply.
 */
export class ListenerFailures {
  /** Every failing listener by id, with its reason. */
  readonly failing = new Map<string, string>();

  /** Of {@link failing}, the listeners refused before the node saw them (their config was unreadable). */
  private readonly refusedHere = new Map<string, string>();

  /** A full snapshot (no `change`) restates every listener; a delta only those it names. */
  track(
    change: SnapshotChange | undefined,
    refused: readonly ListenerFailure[],
    failed: readonly ListenerFailure[],
  ): void {
    if (change === undefined) {
      this.failing.clear();
      this.refusedHere.clear();
    } else {
      for (const id of [...change.remove, ...change.upsert.map((l) => l.id)]) {
        this.failing.delete(id);
        this.refusedHere.delete(id);
      }
    }
    for (const f of refused) this.refusedHere.set(f.listenerId, f.reason);
    for (const f of [...refused, ...failed]) this.failing.set(f.listenerId, f.reason);
  }

  /**
   * Listeners refused here (unreadable configs) and, where the node reports them (`current`), its current
   * failures; else what the applies returned. At most MAX_REPORTED_FAILURES (the node logs every one).
   */
  reported(current: readonly ListenerFailure[] | undefined): ListenerFailure[] {
    let all = this.failing;
    if (current !== undefined) {
      all = new Map(current.map((f) => [f.listenerId, f.reason]));
      // The newer word on a listener: its latest config could not even be read.
      for (const [id, reason] of this.refusedHere) all.set(id, reason);
    }
    return [...all].slice(0, MAX_REPORTED_FAILURES).map(([listenerId, reason]) => ({ listenerId, reason }));
  }
}
