import type { Store } from '@slb/db';
import {
  DEFAULT_QUOTAS,
  QUOTA_NAMES,
  QUOTAS,
  type QuotaLimits,
  type QuotaName,
  type TenantQuotas,
  type UpdateTenantQuotas,
} from '@slb/model';
import { and, eq, sql } from 'drizzle-orm';
import { ApiError, notFound } from '../errors.js';
import { SYSTEM_TENANT_NAME } from './auth.js';
import { nowIso } from './common.js';
import { countOf, usageOf } from './quota-usage.js';

/**
 * Per-tenant quotas: the limits in force (deployment defaults, then an admin's overrides), their checks
 * and their usage. Every check runs inside the transaction of the write it guards, before its insert, and
 * no other write of the tenant can take the last slot between the count and the insert: the check holds a
 * lock of the tenant until the write ends (Store.lock), so two concurrent creates at the limit cannot both
 * pass, on one replica or several.
 *
 * The system tenant (the operator's own, where admin tokens create) is bounded by the ceilings only, which
 * for node-enforced quotas are what a node can run.
 */
export class QuotaService {
  private systemTenantId: string | undefined;

  constructor(
    private readonly store: Store,
    private readonly defaults: QuotaLimits = DEFAULT_QUOTAS,
  ) {}

  private async baseOf(tenantId: string): Promise<QuotaLimits> {
    const { t } = this.store;
    if (this.systemTenantId === undefined) {
      const [system] = await this.store.read((q) =>
        q.select({ id: t.tenants.id }).from(t.tenants).where(eq(t.tenants.name, SYSTEM_TENANT_NAME)),
      );
      this.systemTenantId = system?.id;
    }
    if (tenantId !== this.systemTenantId) return this.defaults;
    return Object.fromEntries(QUOTA_NAMES.map((n) => [n, QUOTAS[n].ceiling])) as QuotaLimits;
  }

  private async overridesOf(tenantId: string): Promise<Partial<QuotaLimits>> {
    const { t } = this.store;
    const rows = await this.store.read((q) =>
      q.select().from(t.tenantQuotas).where(eq(t.tenantQuotas.tenantId, tenantId)),
    );
    return Object.fromEntries(rows.filter((r) => r.name in QUOTAS).map((r) => [r.name, r.limit]));
  }

  async limitOf(tenantId: string, name: QuotaName): Promise<number> {
    const { t } = this.store;
    const [row] = await this.store.read((q) =>
      q
        .select({ limit: t.tenantQuotas.limit })
        .from(t.tenantQuotas)
        .where(and(eq(t.tenantQuotas.tenantId, tenantId), eq(t.tenantQuotas.name, name))),
    );
    return row?.limit ?? (await this.baseOf(tenantId))[name];
  }

  /**
   * Holds the tenant's other quota-checked writes back until the caller's write ends (Store.lock). `check`
   * and `growth` take it; a caller that counts a usage itself for `enforce` takes it before counting.
   */
  lockTenant(tenantId: string): Promise<void> {
    return this.store.lock(`quota:${tenantId}`);
  }

  /**
   * Refuses a write that would take `name` past the tenant's limit, with `quota_exceeded` naming the
   * quota, its limit and the usage. Only growth is checked, so a tenant over a lowered limit can shrink.
   */
  async enforce(tenantId: string, name: QuotaName, usage: number, adding: number): Promise<void> {
    if (adding <= 0) return;
    const limit = await this.limitOf(tenantId, name);
    if (usage + adding <= limit) return;
    throw new ApiError(
      'quota_exceeded',
      `quota ${name} (${QUOTAS[name].description}) exceeded: ${usage} in use, this request adds ${adding}, the limit is ${limit}`,
      undefined,
      { name, limit, usage, requested: adding },
    );
  }

  /** Counts the current usage of `name` under `parent` (the tenant, LB, group, listener or ACL) and enforces. */
  async check(tenantId: string, name: QuotaName, parent: string, adding = 1): Promise<void> {
    if (adding <= 0) return;
    await this.lockTenant(tenantId);
    await this.enforce(tenantId, name, await countOf(this.store, name, parent), adding);
  }

  /**
   * For a usage a write changes in ways simpler to count after it than to predict (backends: a server
   * added to a group every listener of an LB uses): call before the write, and `.check()` after it, in the
   * same transaction. Growth past the limit throws, and the transaction rolls the write back.
   */
  async growth(tenantId: string, name: QuotaName): Promise<{ check(): Promise<void> }> {
    // Counting costs a pass over the tenant's rows: a tenant at the ceiling (the system tenant) is not counted.
    if ((await this.limitOf(tenantId, name)) >= QUOTAS[name].ceiling) return { check: async () => {} };
    await this.lockTenant(tenantId);
    const before = await countOf(this.store, name, tenantId);
    return {
      check: async () => this.enforce(tenantId, name, before, (await countOf(this.store, name, tenantId)) - before),
    };
  }

  async get(tenantId: string): Promise<TenantQuotas> {
    const { t } = this.store;
    const [tenant] = await this.store.read((q) =>
      q.select({ id: t.tenants.id }).from(t.tenants).where(eq(t.tenants.id, tenantId)),
    );
    if (!tenant) throw notFound('tenant', tenantId);
    const base = await this.baseOf(tenantId);
    const overrides = await this.overridesOf(tenantId);
    const usage = await usageOf(this.store, tenantId);
    return {
      tenantId,
      items: QUOTA_NAMES.map((name) => ({
        name,
        description: QUOTAS[name].description,
        scope: QUOTAS[name].scope,
        limit: overrides[name] ?? base[name],
        default: base[name],
        overridden: overrides[name] !== undefined,
        ceiling: QUOTAS[name].ceiling,
        usage: usage[name],
      })),
    };
  }

  /** Sets or (with null) drops overrides. A limit below current usage is allowed: it stops growth only. */
  update(tenantId: string, input: UpdateTenantQuotas): Promise<TenantQuotas> {
    const { t } = this.store;
    return this.store.write(async (q) => {
      await this.get(tenantId);
      const now = nowIso();
      for (const name of QUOTA_NAMES) {
        const limit = input[name];
        if (limit === undefined) continue;
        if (limit === null) {
          await q
            .delete(t.tenantQuotas)
            .where(and(eq(t.tenantQuotas.tenantId, tenantId), eq(t.tenantQuotas.name, name)));
          continue;
        }
        await q
          .insert(t.tenantQuotas)
          .values({ tenantId, name, limit, createdAt: now, updatedAt: now })
          .onConflictDoUpdate({
            target: [t.tenantQuotas.tenantId, t.tenantQuotas.name],
            set: { limit, updatedAt: sql`excluded.updated_at` },
          });
      }
      return this.get(tenantId);
    });
  }
}
