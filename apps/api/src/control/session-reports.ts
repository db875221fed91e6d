import type { Store } from '@slb/db';
import type { ListenerFailure, NodeLoadReport, TrafficReport } from '@slb/model';
import type { FastifyBaseLogger } from 'fastify';
import { clampLoad } from './node-reports.js';
import { recordApplied, recordError, recordHeartbeat } from './node-rows.js';
import {
  ackUpTo,
  failedLbsOf,
  failedListenersError,
  forgetSent,
  type LbsTouched,
  type Session,
} from './node-session.js';
import type { ServingRecorder } from './serving-events.js';

export interface SessionReportsOptions {
  store: Store;
  log: FastifyBaseLogger;
  /** Where bind failures are recorded as events; null: nowhere. */
  recorder: ServingRecorder | null;
  /** An L4 node's set of LBs it cannot bind moved: who binds which VIP may change. */
  failedLbsMoved: () => void;
  /** What a node applied, or what fails there, changed: these LBs' runtime may have. */
  runtimeMoved?: (lbs: LbsTouched) => void;
}

/** Node rows' writes waiting for the database past which heartbeats' are skipped. */
const MAX_WAITING_WRITES = 256;

/**
 * What a connected node says about itself, taken in: heartbeats (load, listeners it cannot bind, traffic),
 * acks and refusals of the configs it was sent. Updates its session and its row.
 */
export class SessionReports {
  /** Where the heartbeats' traffic summaries go (the API's TrafficIngest); absent: dropped. */
  trafficSink: ((nodeId: string, report: TrafficReport) => void) | undefined;

  /** The node rows' writes, one after another in the order the reports came (lastError is set by several). */
  private writes: Promise<void> = Promise.resolve();
  private waiting = 0;

  constructor(private readonly options: SessionReportsOptions) {}

  /** Resolves once the rows' writes asked for so far are done (failed ones are logged). */
  written(): Promise<void> {
    return this.writes;
  }

  /**
   * A heartbeat's write is `skippable`: while the database is slow and writes queue up, the next heartbeat
   * says the same, newer; an ack's or an error's is never skipped.
   */
  private write(nodeId: string, run: (store: Store) => Promise<void>, skippable = false): void {
    if (skippable && this.waiting >= MAX_WAITING_WRITES) return;
    const { store, log } = this.options;
    this.waiting++;
    this.writes = this.writes.then(() =>
      run(store)
        .catch((err: unknown) => log.warn({ err, nodeId }, "node's row not updated"))
        .finally(() => {
          this.waiting--;
        }),
    );
  }

  /** `omitted`: failing listeners the heartbeat had no room to name (FAILED_LISTENERS_MAX_BYTES). */
  heartbeat(session: Session, reported: NodeLoadReport, named?: ListenerFailure[], omitted = 0): void {
    const load = clampLoad(reported);
    this.write(session.nodeId, (store) => recordHeartbeat(store, session.nodeId, load), true);
    // Binds are retried by the node: each heartbeat says which still fail, so a freed port heals here too.
    if (named === undefined) return;
    const before = { failures: session.failures, omitted: session.failuresOmitted };
    this.setFailures(session, named, omitted);
    // The node's lastError names the listeners an ack said failed: it follows their retries, so a bind that
    // healed is no longer shown there either (a refused config's error is left as it is).
    const version = session.failuresInLastError;
    const { failures, failuresOmitted } = session;
    if (version !== null && !sameFailures(before, { failures, omitted: failuresOmitted })) {
      const error = failedListenersError(version, failures, failuresOmitted);
      this.write(session.nodeId, (store) => recordError(store, session.nodeId, error));
      if (failures.length === 0) session.failuresInLastError = null;
    }
  }

  /**
   * Only listeners this node was sent count: a node cannot write into another tenant's metrics by naming
   * its listener. Never in the way of the heartbeat: whatever the sink does, the session carries on.
   */
  traffic(session: Session, report: TrafficReport): void {
    if (this.trafficSink === undefined) return;
    const listeners = report.listeners.filter((l) => session.sentJson.has(l.id));
    try {
      this.trafficSink(session.nodeId, { bootId: report.bootId, listeners });
    } catch (err) {
      this.options.log.error({ err, nodeId: session.nodeId }, 'traffic summary not taken');
    }
  }

  ack(session: Session, version: number, named: ListenerFailure[] = [], omitted = 0): void {
    const acked = ackUpTo(session, version);
    if (acked === null) return; // an ack for something we did not send (or already superseded)
    this.options.runtimeMoved?.(acked);
    this.setFailures(session, named, omitted);
    const { failures, failuresOmitted } = session;
    if (failures.length > 0) {
      this.options.log.warn(
        { nodeId: session.nodeId, version, failed: failures.length + failuresOmitted, first: failures.slice(0, 20) },
        'node applied a config but not every listener of it',
      );
    }
    session.failuresInLastError = failures.length === 0 ? null : version;
    const error = failedListenersError(version, failures, failuresOmitted);
    this.write(session.nodeId, (store) => recordApplied(store, session.nodeId, version, error));
  }

  nack(session: Session, version: number, reason: string): void {
    this.options.log.warn({ nodeId: session.nodeId, version, reason }, 'node refused a config');
    this.failed(session, version, reason);
  }

  /** The node did not take `version`: it keeps its last good config, and gets everything anew on the next change. */
  failed(session: Session, version: number, reason: string): void {
    this.write(session.nodeId, (store) => recordError(store, session.nodeId, `version ${version}: ${reason}`));
    forgetSent(session);
    this.options.runtimeMoved?.('all');
  }

  /**
   * What a report says fails, gathered over the reports of a node that rotates what it names. Gathered
   * failures outlive the report, so only listeners this node was sent are kept: a node naming made-up ids
   * cannot grow what the API holds for it past the listeners it runs.
   */
  private setFailures(session: Session, named: ListenerFailure[], namedOmitted: number): void {
    const round = session.failureRound;
    const sent = (f: ListenerFailure) => session.sentJson.has(f.listenerId);
    const { failures, omitted } = round
      ? round.take(named.filter(sent), namedOmitted)
      : { failures: named, omitted: namedOmitted };
    // The listeners' bindErrors are shared with the other replicas from here (see runtimeParts).
    const failuresMoved = !sameFailures({ failures: session.failures, omitted: 0 }, { failures, omitted: 0 });
    session.failures = failures;
    session.failuresOmitted = failures.length === 0 ? 0 : omitted;
    this.options.recorder?.observeBinds(session, failures);
    const before = session.failedLbs;
    session.failedLbs = failedLbsOf(session.sentByLb, failures);
    // A VIP its binder cannot bind may be held by another node (see chooseVipBinders): look again.
    const same = before.size === session.failedLbs.size && [...before].every((id) => session.failedLbs.has(id));
    if (!same && session.kind === 'l4') this.options.failedLbsMoved();
    if (!same || failuresMoved) this.options.runtimeMoved?.(new Set([...before, ...session.failedLbs]));
  }
}

function sameFailures(
  a: { failures: readonly ListenerFailure[]; omitted: number },
  b: { failures: readonly ListenerFailure[]; omitted: number },
): boolean {
  if (a.omitted !== b.omitted || a.failures.length !== b.failures.length) return false;
  return a.failures.every((f, i) => f.listenerId === b.failures[i]?.listenerId && f.reason === b.failures[i]?.reason);
}
