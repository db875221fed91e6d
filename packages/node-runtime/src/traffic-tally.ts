import { randomUUID } from 'node:crypto';
import {
  type ListenerTrafficReport,
  MAX_TRAFFIC_LISTENERS_PER_BEAT,
  RESPONSE_CLASSES,
  TRAFFIC_REPORT_MAX_BYTES,
  type TrafficReport,
  UPSTREAM_TIME_BOUNDS_MS,
} from '@slb/model';

// What a node tells the control plane about its traffic, per listener, in each heartbeat: plain counters
// the forwarding path bumps beside its Prometheus series (those come and go with backends; these only grow
// while the node serves the listener), read once a beat.

/** One listener's counters since the node process started, and its open connections now. */
export class ListenerTraffic {
  conns = 0;
  bytesIn = 0;
  bytesOut = 0;
  drops = 0;
  active = 0;
  /** Responses by class (RESPONSE_CLASSES order): http/https listeners only. */
  readonly responses: number[] | null;
  /** Backend response times per UPSTREAM_TIME_BOUNDS_MS bucket (the last: slower than all): http/https only. */
  readonly upstreamMs: number[] | null;

  constructor(http: boolean) {
    this.responses = http ? new Array<number>(RESPONSE_CLASSES.length).fill(0) : null;
    this.upstreamMs = http ? new Array<number>(UPSTREAM_TIME_BOUNDS_MS.length + 1).fill(0) : null;
  }

  /** A response sent to the client with this status (the node's own 502/503/504 included). */
  response(status: number): void {
    if (this.responses === null) return;
    const i = Math.trunc(status / 100) - 2;
    this.responses[Math.max(0, Math.min(i, 3))]!++;
  }

  /** The backend's response head arrived after `ms`. */
  upstreamTime(ms: number): void {
    if (this.upstreamMs === null) return;
    let i = 0;
    while (i < UPSTREAM_TIME_BOUNDS_MS.length && ms > UPSTREAM_TIME_BOUNDS_MS[i]!) i++;
    this.upstreamMs[i]!++;
  }

  report(id: string): ListenerTrafficReport {
    const r: ListenerTrafficReport = {
      id,
      conns: this.conns,
      bytesIn: this.bytesIn,
      bytesOut: this.bytesOut,
      drops: this.drops,
      active: Math.max(0, this.active),
    };
    if (this.responses !== null) r.responses = [...this.responses];
    if (this.upstreamMs !== null) r.upstreamMs = [...this.upstreamMs];
    return r;
  }
}

/** A node's listeners' traffic counters. */
export class TrafficTally {
  private readonly listeners = new Map<string, { traffic: ListenerTraffic; holders: number; reported: boolean }>();

  /**
   * The counters of listener `id`, made on first use; held until as many release() calls (a listener
   * re-bound under the same id shares them with the one it replaces). `reported`: sent in heartbeats (an L4
   * node forwarding an http listener to the L7 nodes leaves it to them).
   */
  hold(id: string, http = false, reported = true): ListenerTraffic {
    let entry = this.listeners.get(id);
    if (entry === undefined) {
      entry = { traffic: new ListenerTraffic(http), holders: 0, reported };
      this.listeners.set(id, entry);
    }
    entry.holders++;
    return entry.traffic;
  }

  release(id: string): void {
    const entry = this.listeners.get(id);
    if (entry !== undefined && --entry.holders <= 0) this.listeners.delete(id);
  }

  /** The counters of listener `id`, made on first use and kept until retain() leaves it out. */
  of(id: string, http: boolean): ListenerTraffic {
    return this.listeners.get(id)?.traffic ?? this.hold(id, http);
  }

  /** Forgets every listener not in `ids` (the node no longer serves it). */
  retain(ids: ReadonlySet<string>): void {
    for (const id of this.listeners.keys()) if (!ids.has(id)) this.listeners.delete(id);
  }

  /** Every reported listener's counters now. */
  reports(): ListenerTrafficReport[] {
    const out: ListenerTrafficReport[] = [];
    for (const [id, e] of this.listeners) if (e.reported) out.push(e.traffic.report(id));
    return out;
  }
}

/** The sum of several processes' reports of the same listeners (an L7 node's workers). */
export function sumReports(
  into: Map<string, ListenerTrafficReport>,
  reports: Iterable<ListenerTrafficReport>,
  withActive = true,
): void {
  for (const r of reports) {
    const acc = into.get(r.id);
    if (acc === undefined) {
      into.set(r.id, {
        ...r,
        active: withActive ? r.active : 0,
        ...(r.responses ? { responses: [...r.responses] } : {}),
        ...(r.upstreamMs ? { upstreamMs: [...r.upstreamMs] } : {}),
      });
      continue;
    }
    acc.conns += r.conns;
    acc.bytesIn += r.bytesIn;
    acc.bytesOut += r.bytesOut;
    acc.drops += r.drops;
    if (withActive) acc.active += r.active;
    if (r.responses) {
      acc.responses ??= new Array<number>(r.responses.length).fill(0);
      r.responses.forEach((n, i) => {
        acc.responses![i] = (acc.responses![i] ?? 0) + n;
      });
    }
    if (r.upstreamMs) {
      acc.upstreamMs ??= new Array<number>(r.upstreamMs.length).fill(0);
      r.upstreamMs.forEach((n, i) => {
        acc.upstreamMs![i] = (acc.upstreamMs![i] ?? 0) + n;
      });
    }
  }
}

/** Grows with every counter: equal for two readings of a listener only when nothing was counted between them. */
function signature(r: ListenerTrafficReport): number {
  let s = r.conns + r.bytesIn + r.bytesOut + r.drops;
  if (r.responses) for (const n of r.responses) s += n;
  if (r.upstreamMs) for (const n of r.upstreamMs) s += n;
  return s;
}

export interface TrafficReporterOptions {
  /** Listeners per heartbeat at most; default MAX_TRAFFIC_LISTENERS_PER_BEAT (the schema's bound). */
  maxPerBeat?: number;
  /**
   * An unchanged listener is reported again after this many beats, so every 10 s bucket has its gauge
   * (and the API tells an idle listener, zero, from one no node serves, no data). Default 5.
   */
  refreshBeats?: number;
}

/**
 * Picks what each heartbeat reports: the listeners whose counters or open connections changed since they
 * were last reported, and the ones due for a refresh; past `maxPerBeat`, the longest unreported first (the
 * rest go in the next beats, their cumulative counters losing nothing).
 */
export class TrafficReporter {
  /** New at each start of the process: the API tells a restart from a counter that went backwards. */
  readonly bootId = randomUUID();
  private readonly sent = new Map<string, { signature: number; active: number; beat: number }>();
  private beat = 0;
  private readonly maxPerBeat: number;
  private readonly refreshBeats: number;

  constructor(
    private readonly read: () => ListenerTrafficReport[],
    options: TrafficReporterOptions = {},
  ) {
    this.maxPerBeat = Math.min(options.maxPerBeat ?? MAX_TRAFFIC_LISTENERS_PER_BEAT, MAX_TRAFFIC_LISTENERS_PER_BEAT);
    this.refreshBeats = options.refreshBeats ?? 5;
  }

  report(): TrafficReport {
    const beat = ++this.beat;
    const due: { r: ListenerTrafficReport; sig: number; last: number }[] = [];
    const present = new Set<string>();
    for (const r of this.read()) {
      present.add(r.id);
      const sig = signature(r);
      const last = this.sent.get(r.id);
      if (
        last !== undefined &&
        last.signature === sig &&
        last.active === r.active &&
        beat - last.beat < this.refreshBeats
      )
        continue;
      due.push({ r, sig, last: last?.beat ?? 0 });
    }
    if (this.sent.size > present.size) for (const id of this.sent.keys()) if (!present.has(id)) this.sent.delete(id);
    if (due.length > this.maxPerBeat) due.sort((a, b) => a.last - b.last).length = this.maxPerBeat;
    // Within the heartbeat's bytes too: big counters make long entries.
    let bytes = 0;
    let fit = 0;
    for (; fit < due.length; fit++) {
      bytes += Buffer.byteLength(JSON.stringify(due[fit]!.r)) + 1;
      if (bytes > TRAFFIC_REPORT_MAX_BYTES) break;
    }
    due.length = fit;
    for (const d of due) this.sent.set(d.r.id, { signature: d.sig, active: d.r.active, beat });
    return { bootId: this.bootId, listeners: due.map((d) => d.r) };
  }
}
