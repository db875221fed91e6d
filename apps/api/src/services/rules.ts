import { newId, type Store, type Tables } from '@slb/db';
import type { CreateRule, ListQuery, Rule, UpdateRule } from '@slb/model';
import { and, asc, eq } from 'drizzle-orm';
import { ApiError, notFound, unprocessable } from '../errors.js';
import { backendPortsOf } from './backend-policy.js';
import { checkIfMatch, cursorFilter, nowIso, type Scope, toPage } from './common.js';
import type { ListenerRow, ListenerService } from './listeners.js';
import type { LoadBalancerService } from './load-balancers.js';
import type { QuotaService } from './quotas.js';
import type { ServerGroupService } from './server-groups.js';

type RuleRow = Tables['rules']['$inferSelect'];
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
    private readonly store: Store,
    private readonly lbs: LoadBalancerService,
    private readonly listeners: ListenerService,
    private readonly groups: ServerGroupService,
    private readonly quotas?: QuotaService,
  ) {}

  private async httpListener(scope: Scope, lbId: string, listenerId: string): Promise<ListenerRow> {
    const listener = await this.listeners.find(scope, lbId, listenerId);
    if (listener.protocol !== 'http' && listener.protocol !== 'https') {
      throw new ApiError(
        'unprocessable',
        `forwarding rules are for http and https listeners; ${listenerId} is ${listener.protocol}`,
      );
    }
    return listener;
  }

  async find(scope: Scope, lbId: string, listenerId: string, id: string): Promise<RuleRow> {
    await this.listeners.find(scope, lbId, listenerId);
    const { t } = this.store;
    const [row] = await this.store.read((q) =>
      q
        .select()
        .from(t.rules)
        .where(and(eq(t.rules.id, id), eq(t.rules.listenerId, listenerId))),
    );
    if (!row) throw notFound('rule', id);
    return row;
  }

  async list(scope: Scope, lbId: string, listenerId: string, query: ListQuery) {
    await this.listeners.find(scope, lbId, listenerId);
    const { t } = this.store;
    const limit = query.limit ?? 50;
    const rows = await this.store.read((q) =>
      q
        .select()
        .from(t.rules)
        .where(and(eq(t.rules.listenerId, listenerId), cursorFilter(t.rules.id, query.cursor)))
        .orderBy(asc(t.rules.id))
        .limit(limit + 1),
    );
    return toPage(rows, limit, toRule);
  }

  /** Two rules matching the same host and path would make routing depend on insertion order. */
  private async checkUnique(listenerId: string, domain: string | null, path: string | null, self?: string) {
    if (domain === null && path === null) throw unprocessable('/domain', 'a rule needs a domain, a path or both');
    const { t } = this.store;
    const same = (
      await this.store.read((q) => q.select().from(t.rules).where(eq(t.rules.listenerId, listenerId)))
    ).find((r) => r.id !== self && r.domain === domain && r.path === path);
    if (same) {
      throw new ApiError('conflict', `rule ${same.id} already matches domain ${domain ?? '*'} and path ${path ?? '/'}`);
    }
  }

  create(scope: Scope, lbId: string, listenerId: string, input: CreateRule): Promise<RuleRow> {
    const { t } = this.store;
    return this.store.write(async (q) => {
      const listener = await this.httpListener(scope, lbId, listenerId);
      await this.groups.resolveReference(scope, lbId, input.serverGroupId, '/serverGroupId');
      await this.groups.checkListenerBackends(listener.tenantId, [input.serverGroupId], backendPortsOf(listener));
      const domain = input.domain?.toLowerCase() ?? null;
      const path = input.path ?? null;
      await this.checkUnique(listenerId, domain, path);
      // Bounded by the listener's quota, whose ceiling is what a node builds (MAX_RULES_PER_LISTENER).
      await this.quotas?.check(listener.tenantId, 'rulesPerListener', listenerId);
      const backends = await this.quotas?.growth(listener.tenantId, 'backends');
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
      await q.insert(t.rules).values(row);
      await backends?.check();
      await this.lbs.bumpConfig(lbId);
      return row;
    });
  }

  update(
    scope: Scope,
    lbId: string,
    listenerId: string,
    id: string,
    input: UpdateRule,
    ifMatch?: string,
  ): Promise<RuleRow> {
    const { t } = this.store;
    return this.store.write(async (q) => {
      const row = await this.find(scope, lbId, listenerId, id);
      checkIfMatch(ifMatch, row.revision);
      if (input.serverGroupId !== undefined) {
        await this.groups.resolveReference(scope, lbId, input.serverGroupId, '/serverGroupId');
        const listener = await this.httpListener(scope, lbId, listenerId);
        await this.groups.checkListenerBackends(listener.tenantId, [input.serverGroupId], backendPortsOf(listener));
      }
      const domain = input.domain === undefined ? row.domain : (input.domain?.toLowerCase() ?? null);
      const path = input.path === undefined ? row.path : input.path;
      await this.checkUnique(listenerId, domain, path, id);
      const backends =
        input.serverGroupId === undefined ? undefined : await this.quotas?.growth(row.tenantId, 'backends');
      const next = {
        domain,
        path,
        serverGroupId: input.serverGroupId ?? row.serverGroupId,
        priority: input.priority ?? row.priority,
        revision: row.revision + 1,
        updatedAt: nowIso(),
      };
      await q.update(t.rules).set(next).where(eq(t.rules.id, id));
      await backends?.check();
      await this.lbs.bumpConfig(lbId);
      return { ...row, ...next };
    });
  }

  async remove(scope: Scope, lbId: string, listenerId: string, id: string, ifMatch?: string): Promise<void> {
    const { t } = this.store;
    await this.store.write(async (q) => {
      const row = await this.find(scope, lbId, listenerId, id);
      checkIfMatch(ifMatch, row.revision);
      await q.delete(t.rules).where(eq(t.rules.id, id));
      await this.lbs.bumpConfig(lbId);
    });
  }
}
