import type { ListenerBindError, ListenerFailure } from '@slb/model';
import type { CompiledLb } from './compile-lb.js';
import { failuresOf, type Session } from './node-session.js';
import type { VipServing } from './vip-serving.js';

export interface LbRuntime {
  status: 'provisioning' | 'active';
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

/**
 * One node's part in an LB's runtime, as the replica holding the node's session sees it: what replicas
 * share (RuntimeShare), so any of them can say whether the LB is active. `acked` is the LB's configVersion
 * the node applied last (0: none), comparable across replicas since it is the LB's own, from the database.
 */
export interface NodePart {
  nodeId: string;
  kind: 'l4' | 'l7';
  address: string;
  online: boolean;
  acked: number;
  role?: 'active' | 'standby';
  /** The first of `failures`, as `listenerId: reason`. */
  error?: string;
  /** The LB's listeners the node cannot run, and why (a replica that predates them publishes none). */
  failures?: ListenerFailure[];
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
 * The parts of an LB's runtime this hub's sessions hold. Its HTTP/HTTPS traffic also passes every L7 node,
 * so with such listeners each L7 node has a part too. Pure.
 */
export function runtimeParts(lbId: string, inputs: RuntimeInputs): NodePart[] {
  const { compiled } = inputs;
  const hosting = [...inputs.hosts, ...((compiled?.l7.length ?? 0) > 0 ? inputs.l7Nodes : [])];
  const binders = inputs.serving?.binders ?? [];
  return hosting.map((s) => {
    const failures = s.failedLbs.has(lbId) ? failuresOf(s, lbId) : [];
    const [first] = failures;
    const error = first === undefined ? undefined : `${first.listenerId}: ${first.reason}`;
    return {
      nodeId: s.nodeId,
      kind: s.kind,
      address: s.address,
      online: inputs.isOnline(s),
      acked: s.ackedLbVersions.get(lbId) ?? 0,
      ...(s.kind === 'l4' ? { role: binders.includes(s.nodeId) ? ('active' as const) : ('standby' as const) } : {}),
      ...(error === undefined ? {} : { error, failures }),
    };
  });
}

/**
 * Status and per-node convergence of an LB at `configVersion`, from its parts as every replica sees them.
 * A node several replicas name (it moved between them, and the one it left has not let it go yet) counts
 * once: its online part, then the one that applied more. Active once an online node binds the VIP and every
 * online node applied the LB's current config: an LB shown active while an L7 node still lacks its new
 * listener would answer 404 there. Pure.
 */
export function runtimeOf(parts: readonly NodePart[], configVersion: number): LbRuntime {
  // L4 hosts first, then L7 nodes, each by id: the same order whichever replica answers.
  const nodes = partPerNode(parts)
    .sort((a, b) => (a.kind !== b.kind ? (a.kind === 'l4' ? -1 : 1) : a.nodeId < b.nodeId ? -1 : 1))
    .map(({ nodeId, kind, address, online, acked, role, error }) => ({
      nodeId,
      kind,
      address,
      online,
      converged: acked >= configVersion && error === undefined,
      ...(role === undefined ? {} : { role }),
      ...(error === undefined ? {} : { error }),
    }));
  const online = nodes.filter((n) => n.online);
  return {
    status:
      online.some((n) => n.kind === 'l4' && n.role === 'active') && online.every((n) => n.converged)
        ? 'active'
        : 'provisioning',
    nodes,
  };
}

/**
 * Why nodes cannot run a listener, from its LB's parts as every replica sees them (a node named twice counts
 * once, as in runtimeOf), by node id. Pure.
 */
export function bindErrorsOf(parts: readonly NodePart[], listenerId: string): ListenerBindError[] {
  const out: ListenerBindError[] = [];
  for (const part of partPerNode(parts)) {
    for (const f of part.failures ?? [])
      if (f.listenerId === listenerId) out.push({ nodeId: part.nodeId, reason: f.reason });
  }
  return out.sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1));
}

/** One part per node: its online part, then the one that applied more. */
function partPerNode(parts: readonly NodePart[]): NodePart[] {
  const byNode = new Map<string, NodePart>();
  for (const part of parts) {
    const seen = byNode.get(part.nodeId);
    if (seen === undefined || betterPart(part, seen)) byNode.set(part.nodeId, part);
  }
  return [...byNode.values()];
}

const betterPart = (a: NodePart, b: NodePart) => (a.online !== b.online ? a.online : a.acked > b.acked);
