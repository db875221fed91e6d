import { acls, type Db, listeners, loadBalancers, newId } from '@slb/db';
import type { Acl, AclEntryInput, CreateAcl, ListQuery, UpdateAcl } from '@slb/model';
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import { cidrProblem } from '../domain/cidr.js';
import { ApiError, notFound, unprocessable } from '../errors.js';
import type { AuthContext } from './auth.js';
import { checkIfMatch, cursorFilter, nowIso, type Scope, tenantFilter, toPage } from './common.js';
import type { QuotaService } from './quotas.js';

type AclRow = typeof acls.$inferSelect;

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
    private readonly db: Db,
    private readonly quotas?: QuotaService,
  ) {}

  find(scope: Scope, id: string): AclRow {
    const row = this.db
      .select()
      .from(acls)
      .where(and(eq(acls.id, id), tenantFilter(acls.tenantId, scope)))
      .get();
    if (!row) throw notFound('acl', id);
    return row;
  }

  list(scope: Scope, query: ListQuery) {
    const limit = query.limit ?? 50;
    const rows = this.db
      .select()
      .from(acls)
      .where(and(tenantFilter(acls.tenantId, scope), cursorFilter(acls.id, query.cursor)))
      .orderBy(asc(acls.id))
      .limit(limit + 1)
      .all();
    return toPage(rows, limit, toAcl);
  }

  create(auth: AuthContext, input: CreateAcl): AclRow {
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
    this.db.transaction(
      () => {
        this.quotas?.check(auth.tenantId, 'acls', auth.tenantId);
        this.quotas?.enforce(auth.tenantId, 'entriesPerAcl', 0, row.entries.length);
        this.db.insert(acls).values(row).run();
      },
      { behavior: 'immediate' },
    );
    return row;
  }

  update(scope: Scope, id: string, input: UpdateAcl, ifMatch?: string): AclRow {
    return this.db.transaction(() => {
      const row = this.find(scope, id);
      checkIfMatch(ifMatch, row.revision);
      const entries = input.entries ? checkEntries(input.entries) : row.entries;
      this.quotas?.enforce(row.tenantId, 'entriesPerAcl', row.entries.length, entries.length - row.entries.length);
      const next = {
        name: input.name ?? row.name,
        entries,
        revision: row.revision + 1,
        updatedAt: nowIso(),
      };
      this.db.update(acls).set(next).where(eq(acls.id, id)).run();
      // Listeners using this ACL get a new config on every LB that has one.
      const lbIds = this.db
        .selectDistinct({ id: listeners.loadBalancerId })
        .from(listeners)
        .where(eq(listeners.aclId, id))
        .all()
        .map((l) => l.id);
      if (lbIds.length > 0) {
        this.db
          .update(loadBalancers)
          .set({ configVersion: sql`${loadBalancers.configVersion} + 1` })
          .where(inArray(loadBalancers.id, lbIds))
          .run();
      }
      return { ...row, ...next };
    });
  }

  remove(scope: Scope, id: string, ifMatch?: string): void {
    this.db.transaction(() => {
      const row = this.find(scope, id);
      checkIfMatch(ifMatch, row.revision);
      const users = this.db.select({ id: listeners.id }).from(listeners).where(eq(listeners.aclId, id)).all();
      if (users.length > 0) throw new ApiError('in_use', `acl ${id} is used by ${users.map((u) => u.id).join(', ')}`);
      this.db.delete(acls).where(eq(acls.id, id)).run();
    });
  }
}
