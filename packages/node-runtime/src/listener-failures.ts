import { FAILED_LISTENERS_MAX_BYTES, type ListenerFailure } from '@slb/model';
import type { SnapshotChange } from './control-channel-options.js';

/** What one ack or heartbeat says of the failing listeners: those it names, and how many more there are. */
export interface FailureReport {
  named: ListenerFailure[];
  /** Failing listeners the message has no room to name. */
  omitted: number;
}

/**
 * The listeners of the applied config the node does not serve as sent, as the acks and heartbeats report
 * them: refused here (their config was unreadable) or failed in the node's apply.
 */
export class ListenerFailures {
  /** Every failing listener by id, with its reason. */
  readonly failing = new Map<string, string>();

  /** Of {@link failing}, the listeners refused before the node saw them (their config was unreadable). */
  private readonly refusedHere = new Map<string, string>();

  /** The last listener a report named when it could not name them all: the next report starts after it. */
  private namedUpTo: string | null = null;

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
   * failures; else what the applies returned. Named by listener id in order, as many as fit in
   * FAILED_LISTENERS_MAX_BYTES, the rest counted (the node logs every one). When they do not all fit, the next
   * report starts after the last one named, and after the highest id from the lowest again: the controller
   * (told so by `rotatesFailures` in the hello) gathers them all within ceil(failing / named) reports.
   */
  reported(current: readonly ListenerFailure[] | undefined): FailureReport {
    let all = this.failing;
    if (current !== undefined) {
      all = new Map(current.map((f) => [f.listenerId, f.reason]));
      // The newer word on a listener: its latest config could not even be read.
      for (const [id, reason] of this.refusedHere) all.set(id, reason);
    }
    const ids = [...all.keys()].sort();
    const after = this.namedUpTo;
    // Past the highest id (or with nothing named before), from the first.
    const start = Math.max(0, after === null ? 0 : ids.findIndex((id) => id > after));
    const named: ListenerFailure[] = [];
    let bytes = 2; // the brackets
    for (let k = 0; k < ids.length; k++) {
      const listenerId = ids[(start + k) % ids.length]!;
      const entry = { listenerId, reason: all.get(listenerId) ?? '' };
      bytes += Buffer.byteLength(JSON.stringify(entry)) + 1;
      if (bytes > FAILED_LISTENERS_MAX_BYTES) break;
      named.push(entry);
    }
    this.namedUpTo = named.length < ids.length ? (named.at(-1)?.listenerId ?? null) : null;
    // In id order, as before, whatever id the window started at.
    named.sort((a, b) => (a.listenerId < b.listenerId ? -1 : 1));
    return { named, omitted: ids.length - named.length };
  }
}
