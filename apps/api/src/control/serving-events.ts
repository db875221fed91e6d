import type { ListenerFailure } from '@slb/model';
import { type BindState, bindEvents } from '../events/bind-events.js';
import { type ServingChange, ServingLog, type ServingNode } from '../events/serving-log.js';
import type { EventSink } from '../events/store.js';
import type { Clock, Timer } from './clock.js';
import type { CompiledLb } from './compile-lb.js';
import type { LbSummary } from './lb-rows.js';
import type { Session } from './node-session.js';

/** What decides which node serves which LB, as the orchestrator has it now. */
export interface ServingInputs {
  sessions: Iterable<Session>;
  sessionOf(nodeId: string): Session | undefined;
  isOnline(session: Session, now: number): boolean;
  placement: ReadonlyMap<string, string[]>;
  lbs: readonly LbSummary[];
  compiled: ReadonlyMap<string, CompiledLb>;
}

/**
 * Records nodes that began or stopped serving an LB (`node` events) and listeners a node cannot bind
 * (`bind` events). Looks only when something that decides it moved; a flapping node's events are held
 * back by the ServingLog and recorded when it allows. A write that moves a few LBs (created, deleted,
 * placed elsewhere, given their first HTTP listener or rid of their last) is looked at for those LBs alone;
 * the whole fleet is looked at again only when the nodes themselves changed (a session, an L7 node's
 * liveness, the L7 pool), after a full diff (many LBs moved), or when a held-back change is due.
 */
export class ServingRecorder {
  private readonly log: ServingLog;
  private timer: Timer | null = null;
  /** Something that decides which node serves which LB moved since the log last looked: look at everything. */
  private dirty = true;
  /** LBs whose nodes may have changed since the log last looked, when nothing else did. */
  private readonly movedLbs = new Set<string>();
  /** The nodes (and the L7 nodes' liveness) when the log last looked. */
  private observedNodes = '';
  private stopped = false;
  private observedL7Pool: string | null = null;
  /** LBs with HTTP/HTTPS listeners: every online L7 node serves them. */
  private readonly l7Lbs = new Set<string>();
  /** Per node (across its sessions), the listeners it last said it cannot bind: bind events on change only. */
  private readonly binds = new Map<string, BindState>();

  constructor(
    private readonly events: EventSink,
    private readonly clock: Clock,
    intervalMs: number | undefined,
    private readonly inputs: () => ServingInputs,
  ) {
    this.log = new ServingLog({ intervalMs });
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }

  markDirty(): void {
    this.dirty = true;
  }

  /**
   * After a recompile: looks again at the LBs placed elsewhere (`moved`: created, deleted, moved) and those
   * whose HTTP listeners came or went, or at everything after a full diff or a new L7 pool.
   */
  recompiled(fullDiff: boolean, l7PoolJson: string, changed: readonly string[], moved: readonly string[]): void {
    if (fullDiff || l7PoolJson !== this.observedL7Pool) this.dirty = true;
    this.observedL7Pool = l7PoolJson;
    for (const id of moved) this.movedLbs.add(id);
    const { compiled } = this.inputs();
    for (const id of changed) {
      const l7 = (compiled.get(id)?.l7.length ?? 0) > 0;
      if (l7 !== this.l7Lbs.has(id)) this.movedLbs.add(id);
      if (l7) this.l7Lbs.add(id);
      else this.l7Lbs.delete(id);
    }
    this.observe();
  }

  /** The view's nodes: every L4 session, and the L7 ones online (`sessions` is read once: an iterator). */
  private nodesOf(inputs: ServingInputs, now: number): { l4: Session[]; l7: Session[]; key: string } {
    const l4: Session[] = [];
    const l7: Session[] = [];
    for (const s of inputs.sessions) {
      if (s.kind === 'l4') l4.push(s);
      else if (inputs.isOnline(s, now)) l7.push(s);
    }
    const key = [...l4, ...l7].map((s) => `${s.kind} ${s.nodeId} ${s.address}`).join('\n');
    return { l4, l7, key };
  }

  /**
   * Records the moved LBs' changes alone. A node whose change the log holds back records nothing now: the
   * retry looks at everything by then and records its net change. Returns the earliest such retry.
   */
  private observeMoved(inputs: ServingInputs, nodes: { l4: Session[]; l7: Session[] }, now: number): number | null {
    const joined = new Map<Session, string[]>();
    const left = new Map<Session, string[]>();
    const note = (session: Session, lbId: string, serves: boolean) => {
      const into = serves ? joined : left;
      const list = into.get(session);
      if (list) list.push(lbId);
      else into.set(session, [lbId]);
    };
    for (const lbId of this.movedLbs) {
      const placed = inputs.placement.get(lbId) ?? [];
      for (const s of nodes.l4) note(s, lbId, placed.includes(s.nodeId));
      const l7 = (inputs.compiled.get(lbId)?.l7.length ?? 0) > 0;
      for (const s of nodes.l7) note(s, lbId, l7);
    }
    let retryAt: number | null = null;
    for (const s of [...nodes.l4, ...nodes.l7]) {
      const out = this.log.recordLbs(s.nodeId, s, joined.get(s) ?? [], left.get(s) ?? [], now);
      for (const c of out.changes) this.events.record(servingEvent(c));
      if (out.retryAt !== null) retryAt = retryAt === null ? out.retryAt : Math.min(retryAt, out.retryAt);
    }
    return retryAt;
  }

  /**
   * The L4 nodes each LB's placement names, and every online L7 node for an LB with HTTP/HTTPS listeners,
   * against what was last recorded.
   */
  observe(): void {
    if (this.stopped || (!this.dirty && this.movedLbs.size === 0)) return;
    const now = this.clock.now();
    const inputs = this.inputs();
    const nodes = this.nodesOf(inputs, now);
    if (!this.dirty && nodes.key === this.observedNodes) {
      const retryAt = this.observeMoved(inputs, nodes, now);
      this.movedLbs.clear();
      if (retryAt !== null) this.retryAt(retryAt, now);
      return;
    }
    this.dirty = false;
    this.movedLbs.clear();
    this.observedNodes = nodes.key;
    const { sessionOf, placement, lbs, compiled } = inputs;
    const view = new Map<string, ServingNode & { lbs: Set<string> }>();
    for (const s of [...nodes.l4, ...nodes.l7])
      view.set(s.nodeId, { kind: s.kind, address: s.address, lbs: new Set() });
    for (const [lbId, nodeIds] of placement) {
      for (const id of nodeIds) if (sessionOf(id)?.kind === 'l4') view.get(id)?.lbs.add(lbId);
    }
    for (const node of view.values()) {
      if (node.kind !== 'l7') continue;
      for (const lb of lbs) if ((compiled.get(lb.id)?.l7.length ?? 0) > 0) node.lbs.add(lb.id);
    }
    const { changes, retryAt } = this.log.observe(view, now);
    for (const c of changes) this.events.record(servingEvent(c));
    if (retryAt !== null) this.retryAt(retryAt, now);
  }

  /** Looks at everything again by `at`, when a held-back change may be recorded. */
  private retryAt(at: number, now: number): void {
    if (this.timer !== null) return;
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = null;
        this.dirty = true;
        this.observe();
      },
      Math.max(0, at - now),
    );
  }

  /** Records the listeners this node newly cannot bind, and those it binds again (`bind` events). */
  observeBinds(session: Session, failures: ListenerFailure[]): void {
    // Every heartbeat repeats the failures: the same ones cost a lookup per failure, nothing more.
    const before = this.binds.get(session.nodeId);
    if ((before?.size ?? 0) === failures.length && failures.every((f) => before?.has(f.listenerId))) return;
    let lbOf: Map<string, string> | null = null;
    const lbOfListener = (listenerId: string) => {
      if (lbOf === null) {
        lbOf = new Map();
        for (const [lbId, ids] of session.sentByLb) for (const id of ids) lbOf.set(id, lbId);
      }
      return lbOf.get(listenerId);
    };
    const { compiled } = this.inputs();
    const label = (lbId: string, listenerId: string) => {
      const lb = compiled.get(lbId);
      const config = (lb?.l4.find((l) => l.config.id === listenerId) ?? lb?.l7.find((l) => l.config.id === listenerId))
        ?.config as { protocol?: string; port?: number } | undefined;
      return config ? `${config.protocol}:${config.port}` : null;
    };
    const { state, events } = bindEvents(before ?? new Map(), failures, {
      nodeId: session.nodeId,
      lbOf: lbOfListener,
      label,
      // A listener deleted since is not "bound again": it is gone.
      exists: (lbId, id) => label(lbId, id) !== null,
    });
    if (state.size === 0) this.binds.delete(session.nodeId);
    else this.binds.set(session.nodeId, state);
    for (const e of events) this.events.record(e);
  }
}

function servingEvent(c: ServingChange) {
  const node = `${c.kind.toUpperCase()} node ${c.nodeId} (${c.address})`;
  return {
    loadBalancerId: c.lbId,
    kind: 'node' as const,
    summary: c.joined ? `${node} began serving` : `${node} stopped serving`,
    resourceId: c.nodeId,
    detail: { nodeId: c.nodeId, nodeKind: c.kind, address: c.address, change: c.joined ? 'joined' : 'left' },
  };
}
