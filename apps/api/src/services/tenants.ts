import { type Db, newId, tenants, tokens } from '@slb/db';
import type { CreatedToken, CreateTenant, CreateToken, ListQuery, Tenant, Token } from '@slb/model';
import { and, asc, eq } from 'drizzle-orm';
import { notFound } from '../errors.js';
import { type Authenticator, generateTokenSecret, hashToken } from './auth.js';
import { cursorFilter, nowIso, toPage } from './common.js';

type TokenRow = typeof tokens.$inferSelect;

const toTenant = (r: typeof tenants.$inferSelect): Tenant => ({
  id: r.id,
  name: r.name,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});

const toToken = (r: TokenRow): Token => ({
  id: r.id,
  tenantId: r.tenantId,
  name: r.name,
  role: r.role,
  lastUsedAt: r.lastUsedAt,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});

export class TenantService {
  constructor(
    private readonly db: Db,
    private readonly authenticator: () => Authenticator,
  ) {}

  get(id: string): Tenant {
    const row = this.db.select().from(tenants).where(eq(tenants.id, id)).get();
    if (!row) throw notFound('tenant', id);
    return toTenant(row);
  }

  list(query: ListQuery) {
    const limit = query.limit ?? 50;
    const rows = this.db
      .select()
      .from(tenants)
      .where(cursorFilter(tenants.id, query.cursor))
      .orderBy(asc(tenants.id))
      .limit(limit + 1)
      .all();
    return toPage(rows, limit, toTenant);
  }

  create(input: CreateTenant): Tenant {
    const now = nowIso();
    const row = { id: newId('tenant'), name: input.name, createdAt: now, updatedAt: now };
    this.db.insert(tenants).values(row).run();
    return toTenant(row);
  }

  /** The secret is in this return value only; the database keeps its hash. */
  createToken(tenantId: string, input: CreateToken): CreatedToken {
    this.get(tenantId);
    const secret = generateTokenSecret();
    const now = nowIso();
    const row: TokenRow = {
      id: newId('token'),
      tenantId,
      name: input.name ?? 'token',
      role: input.role ?? 'member',
      secretHash: hashToken(secret),
      lastUsedAt: null,
      createdAt: now,
      updatedAt: now,
    };
    this.db.insert(tokens).values(row).run();
    return { ...toToken(row), token: secret };
  }

  listTokens(tenantId: string, query: ListQuery) {
    this.get(tenantId);
    const limit = query.limit ?? 50;
    const rows = this.db
      .select()
      .from(tokens)
      .where(and(eq(tokens.tenantId, tenantId), cursorFilter(tokens.id, query.cursor)))
      .orderBy(asc(tokens.id))
      .limit(limit + 1)
      .all();
    return toPage(rows, limit, toToken);
  }

  revokeToken(tenantId: string, tokenId: string): void {
    const result = this.db
      .delete(tokens)
      .where(and(eq(tokens.id, tokenId), eq(tokens.tenantId, tenantId)))
      .run();
    if (result.changes === 0) throw notFound('token', tokenId);
    this.authenticator().forget();
  }
}
