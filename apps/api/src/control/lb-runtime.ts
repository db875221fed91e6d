import type { CompiledLb } from './compile-lb.js';
import { failureOf, type Session } from './node-session.js';
import type { VipServing } from './vip-serving.js';

export interface LbRuntime {
  status: 'provisioning' | 'active';
  addresses: string[];
  nodes: {
    nodeId: string;
    kind: 'l4' | 'l7';
    address: string;
    online: boolean;
    converged: boolean;
    /** L4: whether the node binds the LB's VIP now (active) or takes it over if the binder goes (standby). */
    role?: 'active' | 'standby';
    /** What keeps one of the LB's listeners from running there (a bind that fails and is being retried). */
    error?: string;
  }[];
}

/** The hub's state an LB's runtime is read from. */
export interface RuntimeInputs {
  compiled: CompiledLb | undefined;
  /** The L4 nodes hosting it (its placement), with sessions. */
  hosts: Session[];
  /** Every L7 node's session. */
  l7Nodes: Session[];
  serving: VipServing | undefined;
  isOnline(session: Session): boolean;
}

/**
 * Addresses, status and per-node convergence of an LB. Its HTTP/HTTPS traffic also passes every L7 node,
 * so with such listeners it is `active` only once the online L7 nodes applied the change too: an LB shown
 * active while an L7 node still lacks its new listener would answer 404 there. Pure.
 */
export function lbRuntime(lbId: string, configVersion: number, inputs: RuntimeInputs): LbRuntime {
  const { compiled } = inputs;
  const hosting = [...inputs.hosts, ...((compiled?.l7.length ?? 0) > 0 ? inputs.l7Nodes : [])];
  const binders = inputs.serving?.binders ?? [];
  const view = hosting.map((s) => {
    const error = s.failedLbs.has(lbId) ? failureOf(s, lbId) : undefined;
    return {
      nodeId: s.nodeId,
      kind: s.kind,
      address: s.address,
      online: inputs.isOnline(s),
      converged: (s.ackedLbVersions.get(lbId) ?? 0) >= configVersion && error === undefined,
      ...(s.kind === 'l4' ? { role: binders.includes(s.nodeId) ? ('active' as const) : ('standby' as const) } : {}),
      ...(error === undefined ? {} : { error }),
    };
  });
  const online = view.filter((n) => n.online);
  return {
    // Active once an online node binds the VIP and every online node applied the LB's current config.
    status:
      online.some((n) => n.kind === 'l4' && n.role === 'active') && online.every((n) => n.converged)
        ? 'active'
        : 'provisioning',
    addresses: compiled?.address ? [compiled.address] : [],
    nodes: view,
  };
}
