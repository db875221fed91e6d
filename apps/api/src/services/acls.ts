import { newId, type Store, type Tables } from '@slb/db';
import type { Acl, AclEntryInput, CreateAcl, ListQuery, UpdateAcl } from '@slb/model';
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import { cidrProblem } from '../domain/cidr.js';
import { ApiError, notFound, unprocessable } from '../errors.js';
import type { AuthContext } from './auth.js';
import { checkIfMatch, cursorFilter, nowIso, type Scope, tenantFilter, toPage } from './common.js';
import type { QuotaService } from './quotas.js';

type AclRow = Tables['acls']['$inferSelect'];

export const toAcl = (r: AclRow): Acl => ({
  id: r.id,
  name: r.name,
  entries: r.entries,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});

function checkEntries(entries: AclEntryInput[]) {
  const seen = new Set<string>();
  return entries.map((e, i) => {
    const problem = cidrProblem(e.cidr);
    if (problem) throw unprocessable(`/entries/${i}/cidr`, `${e.cidr} ${problem}`);
    const key = e.cidr.toLowerCase();
    if (seen.has(key)) throw unprocessable(`/entries/${i}/cidr`, `${e.cidr} is listed twice`);
    seen.add(key);
    return { cidr: e.cidr, description: e.description ?? '' };
  });
}

export class AclService {
  constructor(
    private readonly store: Store,
    private readonly quotas?: QuotaService,
  ) {}

  async find(scope: Scope, id: string): Promise<AclRow> {
    const { t } = this.store;
    const [row] = await this.store.read((q) =>
      q
        .select()
        .from(t.acls)
        .where(and(eq(t.acls.id, id), tenantFilter(t.acls.tenantId, scope))),
    );
    if (!row) throw notFound('acl', id);
    return row;
  }

  async list(scope: Scope, query: ListQuery) {
    const { t } = this.store;
    const limit = query.limit ?? 50;
    const rows = await this.store.read((q) =>
      q
        .select()
        .from(t.acls)
        .where(and(tenantFilter(t.acls.tenantId, scope), cursorFilter(t.acls.id, query.cursor)))
        .orderBy(asc(t.acls.id))
        .limit(limit + 1),
    );
    return toPage(rows, limit, toAcl);
  }

  async create(auth: AuthContext, input: CreateAcl): Promise<AclRow> {
    const now = nowIso();
    const row: AclRow = {
      id: newId('acl'),
      tenantId: auth.tenantId,
      name: input.name,
      entries: checkEntries(input.entries ?? []),
      revision: 1,
      createdAt: now,
      updatedAt: now,
    };
    const { t } = this.store;
    await this.store.write(async (q) => {
      await this.quotas?.check(auth.tenantId, 'acls', auth.tenantId);
      await this.quotas?.enforce(auth.tenantId, 'entriesPerAcl', 0, row.entries.length);
      await q.insert(t.acls).values(row);
    });
    return row;
  }

  update(scope: Scope, id: string, input: UpdateAcl, ifMatch?: string): Promise<AclRow> {
    const { t } = this.store;
    return this.store.write(async (q) => {
      const row = await this.find(scope, id);
      checkIfMatch(ifMatch, row.revision);
      const entries = input.entries ? checkEntries(input.entries) : row.entries;
      await this.quotas?.enforce(
        row.tenantId,
        'entriesPerAcl',
        row.entries.length,
        entries.length - row.entries.length,
      );
      const next = {
        name: input.name ?? row.name,
        entries,
        revision: row.revision + 1,
        updatedAt: nowIso(),
      };
      await q.update(t.acls).set(next).where(eq(t.acls.id, id));
      // Listeners using this ACL get a new config on every LB that has one.
      const lbIds = (
        await q.selectDistinct({ id: t.listeners.loadBalancerId }).from(t.listeners).where(eq(t.listeners.aclId, id))
      ).map((l) => l.id);
      if (lbIds.length > 0) {
        await q
          .update(t.loadBalancers)
          .set({ configVersion: sql`${t.loadBalancers.configVersion} + 1` })
          .where(inArray(t.loadBalancers.id, lbIds));
      }
      return { ...row, ...next };
    });
  }

  async remove(scope: Scope, id: string, ifMatch?: string): Promise<void> {
    const { t } = this.store;
    await this.store.write(async (q) => {
      const row = await this.find(scope, id);
      checkIfMatch(ifMatch, row.revision);
      const users = await q.select({ id: t.listeners.id }).from(t.listeners).where(eq(t.listeners.aclId, id));
      if (users.length > 0) throw new ApiError('in_use', `acl ${id} is used by ${users.map((u) => u.id).join(', ')}`);
      await q.delete(t.acls).where(eq(t.acls.id, id));
    });
  }
}
