import type { L7Listener, L7NodeSnapshot } from '@slb/model';
import type { BackendGuard, SessionSync } from '@slb/node-runtime';
import type { Logger } from 'pino';
import { BackendStates } from './backend-states.js';
import type { Metrics } from './metrics.js';
import type { ListenerState } from './proxy.js';
import { RetryBudget, type RetryBudgetOptions } from './retry-budget.js';
import { compileRules } from './rules.js';
import { listenerPoolScope, type PassiveHealthOptions, ServerGroupRuntime } from './server-group.js';
import { LearnedCookies } from './sticky.js';
import { StickySync, syncsSticky } from './sticky-sync.js';

// What each listener serves with, built per config, and the state that survives its reloads: passive-health
// and load counters, retry budgets, learned backend cookies and their session sync.

export interface ListenerStatesOptions {
  readonly health: Required<PassiveHealthOptions>;
  readonly retryBudget?: RetryBudgetOptions;
  /** Session sync for `server`-mode sticky listeners; absent = local tables only. */
  readonly sync?: SessionSync;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

export class ListenerStates {
  /** Per backend (group, server, address:port), across listeners and reloads; app.ts forgets unused ones. */
  readonly backends = new BackendStates();
  private readonly budgets = new Map<string, RetryBudget>();
  private readonly learned = new Map<string, LearnedCookies>();
  private readonly stickySyncs = new Map<string, StickySync>();

  constructor(private readonly options: ListenerStatesOptions) {}

  /** The state `l` serves with; backends `guard` refuses are left out (logged and counted). */
  stateFor(l: L7Listener, guard: BackendGuard): ListenerState {
    const { metrics, logger } = this.options;
    let budget = this.budgets.get(l.id);
    if (!budget) {
      budget = new RetryBudget(this.options.retryBudget);
      this.budgets.set(l.id, budget);
    }
    const allowed = (b: L7Listener['serverGroups'][number]['backends'][number]) => {
      const reason = guard.check(b.address, b.port);
      if (reason === null) return true;
      metrics.backendDenied.labels(reason).inc();
      logger.warn({ listener: l.id, server: b.serverId, reason }, 'backend denied: not connecting to it');
      return false;
    };
    const groups = new Map(
      l.serverGroups.map((g) => [
        g.id,
        new ServerGroupRuntime(
          g.id,
          g.backends.filter(allowed),
          l.scheduler,
          this.backends,
          this.options.health,
          Date.now,
          listenerPoolScope(l),
        ),
      ]),
    );
    return { config: l, rules: compileRules(l.rules), groups, budget, learned: this.learnedFor(l.id) };
  }

  /**
   * Attaches `server`-mode listeners to session sync (and detaches the others); resolves once newly
   * attached ones have loaded their peers' entries, bounded by the sync's load timeout.
   */
  async syncSticky(snapshot: L7NodeSnapshot, wanted: ReadonlyMap<string, L7Listener>): Promise<void> {
    for (const [id, s] of this.stickySyncs) {
      const l = wanted.get(id);
      if (l && syncsSticky(l) && s.scope.tenantId === l.tenantId) continue;
      s.detach();
      this.stickySyncs.delete(id);
    }
    const sync = this.options.sync;
    if (sync === undefined) return;
    const loading: Promise<boolean>[] = [];
    for (const l of snapshot.listeners) {
      if (!syncsSticky(l) || this.stickySyncs.has(l.id)) continue;
      const s = new StickySync(sync, { tenantId: l.tenantId, listenerId: l.id }, this.learnedFor(l.id));
      this.stickySyncs.set(l.id, s);
      loading.push(s.ready);
    }
    await Promise.all(loading);
  }

  /** Forgets the retry budgets and learned cookies of listeners no longer wanted. */
  retain(wanted: ReadonlyMap<string, unknown>): void {
    for (const id of [...this.budgets.keys()]) {
      if (!wanted.has(id)) {
        this.budgets.delete(id);
        this.learned.delete(id);
      }
    }
  }

  /** Detaches every listener from session sync (on close). */
  detachAll(): void {
    for (const s of this.stickySyncs.values()) s.detach();
    this.stickySyncs.clear();
  }

  private learnedFor(listenerId: string): LearnedCookies {
    let cookies = this.learned.get(listenerId);
    if (!cookies) {
      cookies = new LearnedCookies();
      this.learned.set(listenerId, cookies);
    }
    return cookies;
  }
}
