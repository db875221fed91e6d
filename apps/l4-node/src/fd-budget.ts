import type { RefusalReason } from './connection-limits.js';

/**
 * The descriptors left to forwarding under an open-file limit: the rest is kept for what the node itself
 * needs (control channel, session-sync Redis, metrics scrapes, log and module files), so clients that fill
 * the node make it refuse them, not fail its own work with EMFILE.
 */
export function fdBudgetFor(openFileLimit: number): number {
  const reserve = Math.min(1024, Math.max(64, Math.floor(openFileLimit / 8)));
  return Math.max(0, openFileLimit - reserve);
}

/**
 * The node's descriptors held by forwarding, shared by every listener: a TCP session counts two (client
 * and backend), a UDP flow one, a listening socket one. A plain counter, so the hot path pays one compare.
 */
export class FdBudget {
  used = 0;

  constructor(readonly max: number) {}

  /** Takes `n` if they fit; false (nothing taken) otherwise. */
  tryTake(n: number): boolean {
    if (this.used + n > this.max) return false;
    this.used += n;
    return true;
  }

  /** Takes `n` whether or not they fit (a listening socket that is already open). */
  take(n: number): void {
    this.used += n;
  }

  give(n: number): void {
    this.used -= n;
  }
}

/**
 * One tenant's descriptors on this node: at most its share of the node's budget, and within the node's
 * budget itself. Every listener of the tenant holds the same object, resolved once when it is created, so
 * a connection costs two compares and no lookup.
 */
export class TenantFds {
  used = 0;

  constructor(
    readonly node: FdBudget,
    readonly max: number,
  ) {}

  /** Takes `n` from the tenant and the node; what stood in the way (nothing is taken then), or undefined. */
  tryTake(n: number): Extract<RefusalReason, 'tenant_limit' | 'node_limit'> | undefined {
    // The node first: when it is full that is the reason, whatever the tenant holds.
    if (this.node.used + n > this.node.max) return 'node_limit';
    if (this.used + n > this.max) return 'tenant_limit';
    this.node.used += n;
    this.used += n;
    return undefined;
  }

  /** Takes `n` whether or not they fit (a listening socket that is already open). */
  take(n: number): void {
    this.used += n;
    this.node.take(n);
  }

  give(n: number): void {
    this.used -= n;
    this.node.give(n);
  }
}

/** The node's budget and each tenant's part of it. */
export class NodeFds {
  readonly node: FdBudget;
  private readonly tenants = new Map<string, TenantFds>();

  constructor(
    maxOpenFiles: number,
    private readonly tenantShare: number,
  ) {
    this.node = new FdBudget(maxOpenFiles);
  }

  /** A tenant's descriptors (kept while the node runs: one small object per tenant it ever served). */
  forTenant(tenantId: string): TenantFds {
    let t = this.tenants.get(tenantId);
    if (t === undefined) {
      t = new TenantFds(this.node, Math.floor(this.node.max * this.tenantShare));
      this.tenants.set(tenantId, t);
    }
    return t;
  }
}
