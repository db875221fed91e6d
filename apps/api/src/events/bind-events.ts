import type { ListenerFailure } from '@slb/model';
import type { NewEvent } from './store.js';

/** The listeners a node last said it cannot bind (or build), with their LB and the node's reason. */
export type BindState = ReadonlyMap<string, { lbId: string; reason: string }>;

export interface BindContext {
  nodeId: string;
  /** The LB of a listener the node was sent; undefined for one it was not (not ours to record). */
  lbOf(listenerId: string): string | undefined;
  /** `tcp:80`, or null when the listener is not known (any more). */
  label(lbId: string, listenerId: string): string | null;
  /** Whether the listener still exists: one deleted is not "bound again". */
  exists(lbId: string, listenerId: string): boolean;
}

/**
 * `bind` events from a node's report of its failed listeners, on change only: a listener that newly fails,
 * and one that no longer does. The same failures reported by every heartbeat record nothing; a new reason
 * for a listener that still fails neither. Pure: returns the node's new state and the events.
 */
export function bindEvents(
  before: BindState,
  failures: readonly ListenerFailure[],
  ctx: BindContext,
): { state: Map<string, { lbId: string; reason: string }>; events: NewEvent[] } {
  const state = new Map<string, { lbId: string; reason: string }>();
  const events: NewEvent[] = [];
  for (const f of failures) {
    const known = before.get(f.listenerId);
    const lbId = known?.lbId ?? ctx.lbOf(f.listenerId);
    if (lbId === undefined) continue;
    const reason = f.reason.slice(0, 300);
    state.set(f.listenerId, { lbId, reason });
    if (known) continue;
    const listener = ctx.label(lbId, f.listenerId) ?? f.listenerId;
    events.push({
      loadBalancerId: lbId,
      kind: 'bind',
      summary: `node ${ctx.nodeId} cannot bind listener ${listener}: ${reason}`,
      resourceId: f.listenerId,
      detail: { nodeId: ctx.nodeId, listenerId: f.listenerId, failing: true, reason },
    });
  }
  for (const [listenerId, { lbId, reason }] of before) {
    if (state.has(listenerId) || !ctx.exists(lbId, listenerId)) continue;
    const listener = ctx.label(lbId, listenerId) ?? listenerId;
    events.push({
      loadBalancerId: lbId,
      kind: 'bind',
      summary: `node ${ctx.nodeId} binds listener ${listener} again`,
      resourceId: listenerId,
      detail: { nodeId: ctx.nodeId, listenerId, failing: false, previousReason: reason },
    });
  }
  return { state, events };
}
