import { type Db, newId, rules } from '@slb/db';
import type { CreateRule, ListQuery, Rule, UpdateRule } from '@slb/model';
import { and, asc, eq } from 'drizzle-orm';
import { ApiError, notFound, unprocessable } from '../errors.js';
import { backendPortsOf } from './backend-policy.js';
import { checkIfMatch, cursorFilter, nowIso, type Scope, toPage } from './common.js';
import type { ListenerRow, ListenerService } from './listeners.js';
import type { LoadBalancerService } from './load-balancers.js';
import type { QuotaService } from './quotas.js';
import type { ServerGroupService } from './server-groups.js';

type RuleRow = typeof rules.$inferSelect;
const DEFAULT_PRIORITY = 100;

export const toRule = (r: RuleRow): Rule => ({
  id: r.id,
  listenerId: r.listenerId,
  domain: r.domain,
  path: r.path,
  serverGroupId: r.serverGroupId,
  priority: r.priority,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});

export class RuleService {
  constructor(
    private readonly db: Db,
    private readonly lbs: LoadBalancerService,
    private readonly listeners: ListenerService,
    private readonly groups: ServerGroupService,
    private readonly quotas?: QuotaService,
  ) {}

  private httpListener(scope: Scope, lbId: string, listenerId: string): ListenerRow {
    const listener = this.listeners.find(scope, lbId, listenerId);
    if (listener.protocol !== 'http' && listener.protocol !== 'https') {
      throw new ApiError(
        'unprocessable',
        `forwarding rules are for http and https listeners; ${listenerId} is ${listener.protocol}`,
      );
    }
    return listener;
  }

  find(scope: Scope, lbId: string, listenerId: string, id: string): RuleRow {
    this.listeners.find(scope, lbId, listenerId);
    const row = this.db
      .select()
      .from(rules)
      .where(and(eq(rules.id, id), eq(rules.listenerId, listenerId)))
      .get();
    if (!row) throw notFound('rule', id);
    return row;
  }

  list(scope: Scope, lbId: string, listenerId: string, query: ListQuery) {
    this.listeners.find(scope, lbId, listenerId);
    const limit = query.limit ?? 50;
    const rows = this.db
      .select()
      .from(rules)
      .where(and(eq(rules.listenerId, listenerId), cursorFilter(rules.id, query.cursor)))
      .orderBy(asc(rules.id))
      .limit(limit + 1)
      .all();
    return toPage(rows, limit, toRule);
  }

  /** Two rules matching the same host and path would make routing depend on insertion order. */
  private checkUnique(listenerId: string, domain: string | null, path: string | null, self?: string): void {
    if (domain === null && path === null) throw unprocessable('/domain', 'a rule needs a domain, a path or both');
    const same = this.db
      .select()
      .from(rules)
      .where(eq(rules.listenerId, listenerId))
      .all()
      .find((r) => r.id !== self && r.domain === domain && r.path === path);
    if (same) {
      throw new ApiError('conflict', `rule ${same.id} already matches domain ${domain ?? '*'} and path ${path ?? '/'}`);
    }
  }

  create(scope: Scope, lbId: string, listenerId: string, input: CreateRule): RuleRow {
    return this.db.transaction(() => {
      const listener = this.httpListener(scope, lbId, listenerId);
      this.groups.resolveReference(scope, lbId, input.serverGroupId, '/serverGroupId');
      this.groups.checkListenerBackends(listener.tenantId, [input.serverGroupId], backendPortsOf(listener));
      const domain = input.domain?.toLowerCase() ?? null;
      const path = input.path ?? null;
      this.checkUnique(listenerId, domain, path);
      // Bounded by the listener's quota, whose ceiling is what a node builds (MAX_RULES_PER_LISTENER).
      this.quotas?.check(listener.tenantId, 'rulesPerListener', listenerId);
      const backends = this.quotas?.growth(listener.tenantId, 'backends');
      const now = nowIso();
      const row: RuleRow = {
        id: newId('rule'),
        tenantId: listener.tenantId,
        listenerId,
        domain,
        path,
        serverGroupId: input.serverGroupId,
        priority: input.priority ?? DEFAULT_PRIORITY,
        revision: 1,
        createdAt: now,
        updatedAt: now,
      };
      this.db.insert(rules).values(row).run();
      backends?.check();
      this.lbs.bumpConfig(lbId);
      return row;
    });
  }

  update(scope: Scope, lbId: string, listenerId: string, id: string, input: UpdateRule, ifMatch?: string): RuleRow {
    return this.db.transaction(() => {
      const row = this.find(scope, lbId, listenerId, id);
      checkIfMatch(ifMatch, row.revision);
      if (input.serverGroupId !== undefined) {
        this.groups.resolveReference(scope, lbId, input.serverGroupId, '/serverGroupId');
        const listener = this.httpListener(scope, lbId, listenerId);
        this.groups.checkListenerBackends(listener.tenantId, [input.serverGroupId], backendPortsOf(listener));
      }
      const domain = input.domain === undefined ? row.domain : (input.domain?.toLowerCase() ?? null);
      const path = input.path === undefined ? row.path : input.path;
      this.checkUnique(listenerId, domain, path, id);
      const backends = input.serverGroupId === undefined ? undefined : this.quotas?.growth(row.tenantId, 'backends');
      const next = {
        domain,
        path,
        serverGroupId: input.serverGroupId ?? row.serverGroupId,
        priority: input.priority ?? row.priority,
        revision: row.revision + 1,
        updatedAt: nowIso(),
      };
      this.db.update(rules).set(next).where(eq(rules.id, id)).run();
      backends?.check();
      this.lbs.bumpConfig(lbId);
      return { ...row, ...next };
    });
  }

  remove(scope: Scope, lbId: string, listenerId: string, id: string, ifMatch?: string): void {
    this.db.transaction(() => {
      const row = this.find(scope, lbId, listenerId, id);
      checkIfMatch(ifMatch, row.revision);
      this.db.delete(rules).where(eq(rules.id, id)).run();
      this.lbs.bumpConfig(lbId);
    });
  }
}
