import { type Db, tenantQuotas, tenants } from '@slb/db';
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
 * and their usage. Every check runs inside the transaction of the write it guards, before its insert:
 * better-sqlite3 runs a transaction synchronously, so no other write can take the last slot between the
 * count and the insert, and two concurrent creates at the limit cannot both pass.
 *
 * The system tenant (the operator's own, where admin tokens create) is bounded by the ceilings only, which
 * for node-enforced quotas are what a node can run.
 */
export class QuotaService {
  private systemTenantId: string | undefined;

  constructor(
    private readonly db: Db,
    private readonly defaults: QuotaLimits = DEFAULT_QUOTAS,
  ) {}

  private baseOf(tenantId: string): QuotaLimits {
    this.systemTenantId ??= this.db
      .select({ id: tenants.id })
      .from(tenants)
      .where(eq(tenants.name, SYSTEM_TENANT_NAME))
      .get()?.id;
    if (tenantId !== this.systemTenantId) return this.defaults;
    return Object.fromEntries(QUOTA_NAMES.map((n) => [n, QUOTAS[n].ceiling])) as QuotaLimits;
  }

  private overridesOf(tenantId: string): Partial<QuotaLimits> {
    const rows = this.db.select().from(tenantQuotas).where(eq(tenantQuotas.tenantId, tenantId)).all();
    return Object.fromEntries(rows.filter((r) => r.name in QUOTAS).map((r) => [r.name, r.limit]));
  }

  limitOf(tenantId: string, name: QuotaName): number {
    const row = this.db
      .select({ limit: tenantQuotas.limit })
      .from(tenantQuotas)
      .where(and(eq(tenantQuotas.tenantId, tenantId), eq(tenantQuotas.name, name)))
      .get();
    return row?.limit ?? this.baseOf(tenantId)[name];
  }

  /**
   * Refuses a write that would take `name` past the tenant's limit, with `quota_exceeded` naming the
   * quota, its limit and the usage. Only growth is checked, so a tenant over a lowered limit can shrink.
   */
  enforce(tenantId: string, name: QuotaName, usage: number, adding: number): void {
    if (adding <= 0) return;
    const limit = this.limitOf(tenantId, name);
    if (usage + adding <= limit) return;
    throw new ApiError(
      'quota_exceeded',
      `quota ${name} (${QUOTAS[name].description}) exceeded: ${usage} in use, this request adds ${adding}, the limit is ${limit}`,
      undefined,
      { name, limit, usage, requested: adding },
    );
  }

  /** Counts the current usage of `name` under `parent` (the tenant, LB, group, listener or ACL) and enforces. */
  check(tenantId: string, name: QuotaName, parent: string, adding = 1): void {
    if (adding <= 0) return;
    this.enforce(tenantId, name, countOf(this.db, name, parent), adding);
  }

  /**
   * For a usage a write changes in ways simpler to count after it than to predict (backends: a server
   * added to a group every listener of an LB uses): call before the write, and `.check()` after it, in the
   * same transaction. Growth past the limit throws, and the transaction rolls the write back.
   */
  growth(tenantId: string, name: QuotaName): { check(): void } {
    // Counting costs a pass over the tenant's rows: a tenant at the ceiling (the system tenant) is not counted.
    if (this.limitOf(tenantId, name) >= QUOTAS[name].ceiling) return { check: () => {} };
    const before = countOf(this.db, name, tenantId);
    return { check: () => this.enforce(tenantId, name, before, countOf(this.db, name, tenantId) - before) };
  }

  get(tenantId: string): TenantQuotas {
    if (!this.db.select({ id: tenants.id }).from(tenants).where(eq(tenants.id, tenantId)).get()) {
      throw notFound('tenant', tenantId);
    }
    const base = this.baseOf(tenantId);
    const overrides = this.overridesOf(tenantId);
    const usage = usageOf(this.db, tenantId);
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
  update(tenantId: string, input: UpdateTenantQuotas): TenantQuotas {
    return this.db.transaction(() => {
      this.get(tenantId);
      const now = nowIso();
      for (const name of QUOTA_NAMES) {
        const limit = input[name];
        if (limit === undefined) continue;
        if (limit === null) {
          this.db
            .delete(tenantQuotas)
            .where(and(eq(tenantQuotas.tenantId, tenantId), eq(tenantQuotas.name, name)))
            .run();
          continue;
        }
        this.db
          .insert(tenantQuotas)
          .values({ tenantId, name, limit, createdAt: now, updatedAt: now })
          .onConflictDoUpdate({
            target: [tenantQuotas.tenantId, tenantQuotas.name],
            set: { limit, updatedAt: sql`excluded.updated_at` },
          })
          .run();
      }
      return this.get(tenantId);
    });
  }
}
