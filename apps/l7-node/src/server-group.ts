import { createScheduler, type Scheduler } from '@slb/balancing';
import type { L7Backend, L7Listener } from '@slb/model';
import type { BackendState, BackendStates } from './backend-states.js';

// A server group as the proxy sees it: the snapshot's backends, a scheduler over the ones that take new
// requests (healthy, weight > 0, not passively ejected), and passive health. Ejection follows Envoy's
// outlier detection: N consecutive connect failures eject a backend for base × 2^(times ejected before),
// capped, and never more than `maxEjectionPercent` of the group at once. The health fleet stays the source
// of truth for `healthy`; ejection only covers the gap until it notices.
// When no positive-weight backend is healthy the group fails open, as the L4 node and cloud load balancers
// do (AWS routes to every target when all are unhealthy): a health check that is wrong everywhere at once
// (a bad path, a firewall in front of the checkers) must not take the whole service down. Requests then go
// to every positive-weight backend; one that is really dead fails its connect and the request is retried.

export interface PassiveHealthOptions {
  /** Consecutive connect failures that eject a backend. Default 3. */
  readonly consecutiveFailures?: number;
  /** First ejection length in ms; doubles with each repeat. Default 5000. */
  readonly baseEjectionMs?: number;
  /** Longest ejection in ms. Default 300000. */
  readonly maxEjectionMs?: number;
  /** Largest share of a group ejected at once, percent. Default 50. */
  readonly maxEjectionPercent?: number;
}

/** A server as a group's scheduler and the proxy see it; its origin and pool key are made on first use. */
export class Backend implements L7Backend {
  readonly serverId: string;
  readonly address: string;
  readonly port: number;
  readonly weight: number;
  readonly healthy: boolean;
  private originText: string | undefined;
  private poolKeyText: string | undefined;

  constructor(
    b: L7Backend,
    readonly state: BackendState,
    /** The listener's pool scope (listenerPoolScope). */
    private readonly poolScope: string,
  ) {
    this.serverId = b.serverId;
    this.address = b.address;
    this.port = b.port;
    this.weight = b.weight;
    this.healthy = b.healthy;
  }

  get origin(): string {
    this.originText ??= originOf(this);
    return this.originText;
  }

  /** Which pool of backend connections this backend's requests use (poolKeyOf). */
  get poolKey(): string {
    this.poolKeyText ??= poolKeyOf(this.poolScope, this);
    return this.poolKeyText;
  }
}

export type SchedulerKind = 'wrr' | 'wlc' | 'rr';

const NO_FLOW = { srcAddr: '', srcPort: 0, dstAddr: '', dstPort: 0, protocol: 'tcp' } as const;

export function originOf(b: { address: string; port: number }): string {
  return b.address.includes(':') ? `http://[${b.address}]:${b.port}` : `http://${b.address}:${b.port}`;
}

/**
 * Backend connections are pooled per listener, so per tenant too, never node-wide: a connection one
 * tenant's request could leave out of step (a smuggled prefix, a half-read body) only ever carries that
 * listener's requests afterwards. `scope` is the listener's (listenerPoolScope).
 */
export function poolKeyOf(scope: string, b: { address: string; port: number }): string {
  return `${scope} ${originOf(b)}`;
}

export function listenerPoolScope(l: { tenantId: string; id: string }): string {
  return `${l.tenantId}/${l.id}`;
}

/**
 * The pool keys of `listeners` that a pool is open for: only listeners with a pool among `open` are walked,
 * so a cleanup does not build a key for each of a fleet's backends.
 */
export function poolKeysInUse(listeners: Iterable<L7Listener>, open: Iterable<string>): Set<string> {
  const scopes = new Set<string>();
  for (const key of open) scopes.add(key.slice(0, key.indexOf(' ')));
  const inUse = new Set<string>();
  if (scopes.size === 0) return inUse;
  for (const l of listeners) {
    const scope = listenerPoolScope(l);
    if (!scopes.has(scope)) continue;
    for (const g of l.serverGroups) for (const b of g.backends) inUse.add(poolKeyOf(scope, b));
  }
  return inUse;
}

export class ServerGroupRuntime {
  readonly backends: readonly Backend[];
  private readonly byId = new Map<string, Backend>();
  private eligible: Backend[] = [];
  private scheduler: Scheduler | null = null;
  private nextExpiry = Number.POSITIVE_INFINITY;
  /** No positive-weight backend is healthy, so every positive-weight one takes requests. */
  failOpen = false;

  constructor(
    readonly id: string,
    backends: readonly L7Backend[],
    private readonly kind: SchedulerKind,
    states: BackendStates,
    private readonly health: Required<PassiveHealthOptions>,
    private readonly now: () => number = Date.now,
    /** The listener's pool scope (listenerPoolScope); '' in unit tests that dispatch nothing. */
    poolScope = '',
  ) {
    this.backends = backends.map((b) => new Backend(b, states.of(id, b), poolScope));
    for (const b of this.backends) this.byId.set(b.serverId, b);
    this.rebuild();
  }

  private rebuild(): void {
    const t = this.now();
    this.nextExpiry = Number.POSITIVE_INFINITY;
    const weighted = this.backends.filter((b) => b.weight > 0);
    this.failOpen = weighted.length > 0 && !weighted.some((b) => b.healthy);
    this.eligible = weighted.filter((b) => {
      if (!b.healthy && !this.failOpen) return false;
      if (b.state.ejectedUntil > t) {
        this.nextExpiry = Math.min(this.nextExpiry, b.state.ejectedUntil);
        return false;
      }
      return true;
    });
    const list = this.eligible;
    this.scheduler = createScheduler(this.kind, {
      backends: list.map((b) => ({ id: b.serverId, weight: b.weight })),
      load: (i) => list[i]?.state.active ?? 0,
    });
  }

  /** An ejection ended since the last rebuild; no clock read while nothing is ejected. */
  private ejectionExpired(): boolean {
    return this.nextExpiry !== Number.POSITIVE_INFINITY && this.now() >= this.nextExpiry;
  }

  /** A backend for a new request, skipping `exclude` (already tried); null when none is left. */
  pick(exclude?: ReadonlySet<Backend>): Backend | null {
    if (this.ejectionExpired()) this.rebuild();
    const n = this.eligible.length;
    if (n === 0 || !this.scheduler) return null;
    for (let k = 0; k < n; k++) {
      const b = this.eligible[this.scheduler.pick(NO_FLOW)];
      if (b && !exclude?.has(b)) return b;
    }
    return this.eligible.find((b) => !exclude?.has(b)) ?? null;
  }

  /** The named server when it still takes requests (sticky sessions), else undefined. */
  takesRequests(serverId: string): Backend | undefined {
    if (this.ejectionExpired()) this.rebuild();
    const b = this.byId.get(serverId);
    return b && this.eligible.includes(b) ? b : undefined;
  }

  succeeded(b: Backend): void {
    b.state.consecutiveFailures = 0;
  }

  /** Records a connect failure; true when this failure ejected the backend. */
  connectFailed(b: Backend): boolean {
    b.state.consecutiveFailures++;
    if (b.state.consecutiveFailures < this.health.consecutiveFailures) return false;
    const t = this.now();
    if (b.state.ejectedUntil > t) return false;
    const ejected = this.backends.filter((x) => x.state.ejectedUntil > t).length;
    const limit = Math.floor((this.backends.length * this.health.maxEjectionPercent) / 100);
    if (ejected + 1 > limit) return false;
    const length = Math.min(this.health.maxEjectionMs, this.health.baseEjectionMs * 2 ** b.state.timesEjected);
    b.state.timesEjected++;
    b.state.ejectedUntil = t + length;
    b.state.consecutiveFailures = 0;
    this.rebuild();
    return true;
  }
}
