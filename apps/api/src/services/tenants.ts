import { changedRows, newId, type Store, type Tables } from '@slb/db';
import type { CreatedToken, CreateTenant, CreateToken, ListQuery, Tenant, Token } from '@slb/model';
import { and, asc, eq } from 'drizzle-orm';
import { notFound } from '../errors.js';
import { type Authenticator, generateTokenSecret, hashToken } from './auth.js';
import { cursorFilter, nowIso, toPage } from './common.js';

type TokenRow = Tables['tokens']['$inferSelect'];

const toTenant = (r: Tables['tenants']['$inferSelect']): Tenant => ({
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
    private readonly store: Store,
    private readonly authenticator: () => Authenticator,
  ) {}

  async get(id: string): Promise<Tenant> {
    const { t } = this.store;
    const [row] = await this.store.read((q) => q.select().from(t.tenants).where(eq(t.tenants.id, id)));
    if (!row) throw notFound('tenant', id);
    return toTenant(row);
  }

  async list(query: ListQuery) {
    const { t } = this.store;
    const limit = query.limit ?? 50;
    const rows = await this.store.read((q) =>
      q
        .select()
        .from(t.tenants)
        .where(cursorFilter(t.tenants.id, query.cursor))
        .orderBy(asc(t.tenants.id))
        .limit(limit + 1),
    );
    return toPage(rows, limit, toTenant);
  }

  async create(input: CreateTenant): Promise<Tenant> {
    const now = nowIso();
    const row = { id: newId('tenant'), name: input.name, createdAt: now, updatedAt: now };
    await this.store.write((q) => q.insert(this.store.t.tenants).values(row));
    return toTenant(row);
  }

  /** The secret is in this return value only; the database keeps its hash. */
  async createToken(tenantId: string, input: CreateToken): Promise<CreatedToken> {
    await this.get(tenantId);
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
    await this.store.write((q) => q.insert(this.store.t.tokens).values(row));
    return { ...toToken(row), token: secret };
  }

  async listTokens(tenantId: string, query: ListQuery) {
    await this.get(tenantId);
    const { t } = this.store;
    const limit = query.limit ?? 50;
    const rows = await this.store.read((q) =>
      q
        .select()
        .from(t.tokens)
        .where(and(eq(t.tokens.tenantId, tenantId), cursorFilter(t.tokens.id, query.cursor)))
        .orderBy(asc(t.tokens.id))
        .limit(limit + 1),
    );
    return toPage(rows, limit, toToken);
  }

  async revokeToken(tenantId: string, tokenId: string): Promise<void> {
    const { t } = this.store;
    const result = await this.store.write((q) =>
      q.delete(t.tokens).where(and(eq(t.tokens.id, tokenId), eq(t.tokens.tenantId, tenantId))),
    );
    if (changedRows(result) === 0) throw notFound('token', tokenId);
    this.authenticator().forget();
  }
}
