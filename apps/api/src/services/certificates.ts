import { type Dialect, newId, type Store, type Tables } from '@slb/db';
import type { Certificate, CreateCertificate, ListQuery } from '@slb/model';
import { and, asc, type Column, eq, or, type SQL, sql } from 'drizzle-orm';
import { parseCertificate } from '../domain/certificate-pem.js';
import { ApiError, notFound } from '../errors.js';
import type { AuthContext } from './auth.js';
import { checkIfMatch, cursorFilter, nowIso, type Scope, tenantFilter, toPage } from './common.js';
import type { QuotaService } from './quotas.js';

type CertificateRow = Tables['certificates']['$inferSelect'];

/** Whether a JSON array column holds `value`: each engine has its own way to open a JSON array. */
function jsonArrayHolds(dialect: Dialect, column: Column, value: string): SQL {
  return dialect === 'postgres'
    ? sql`EXISTS (SELECT 1 FROM json_array_elements_text(${column}) AS e(value) WHERE e.value = ${value})`
    : sql`EXISTS (SELECT 1 FROM json_each(${column}) WHERE value = ${value})`;
}

/** The response shape has no key field: the private key cannot leak through a mapping mistake. */
export const toCertificate = (r: CertificateRow): Certificate => ({
  id: r.id,
  name: r.name,
  subject: r.subject,
  issuer: r.issuer,
  sans: r.sans,
  notBefore: r.notBefore,
  notAfter: r.notAfter,
  fingerprint: r.fingerprint,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});

export class CertificateService {
  constructor(
    private readonly store: Store,
    private readonly quotas?: QuotaService,
    /** Private keys are stored encrypted (secrets/secret-box.ts): never in clear in the database file. */
    private readonly sealSecret: (plain: string) => string = (plain) => plain,
  ) {}

  async find(scope: Scope, id: string): Promise<CertificateRow> {
    const { t } = this.store;
    const [row] = await this.store.read((q) =>
      q
        .select()
        .from(t.certificates)
        .where(and(eq(t.certificates.id, id), tenantFilter(t.certificates.tenantId, scope))),
    );
    if (!row) throw notFound('certificate', id);
    return row;
  }

  async list(scope: Scope, query: ListQuery) {
    const { t } = this.store;
    const limit = query.limit ?? 50;
    const rows = await this.store.read((q) =>
      q
        .select()
        .from(t.certificates)
        .where(and(tenantFilter(t.certificates.tenantId, scope), cursorFilter(t.certificates.id, query.cursor)))
        .orderBy(asc(t.certificates.id))
        .limit(limit + 1),
    );
    return toPage(rows, limit, toCertificate);
  }

  async create(auth: AuthContext, input: CreateCertificate): Promise<CertificateRow> {
    const parsed = parseCertificate(input.certificate, input.privateKey);
    const now = nowIso();
    const row: CertificateRow = {
      id: newId('certificate'),
      tenantId: auth.tenantId,
      name: input.name,
      certificatePem: input.certificate,
      privateKeyPem: input.privateKey,
      ...parsed,
      revision: 1,
      createdAt: now,
      updatedAt: now,
    };
    const { t } = this.store;
    await this.store.write(async (q) => {
      await this.quotas?.check(auth.tenantId, 'certificates', auth.tenantId);
      await q.insert(t.certificates).values({ ...row, privateKeyPem: this.sealSecret(input.privateKey) });
    });
    return row;
  }

  async remove(scope: Scope, id: string, ifMatch?: string): Promise<void> {
    const { t } = this.store;
    await this.store.write(async (q) => {
      const row = await this.find(scope, id);
      checkIfMatch(ifMatch, row.revision);
      const users = await q
        .select({ id: t.listeners.id })
        .from(t.listeners)
        .where(
          or(
            eq(t.listeners.certificateId, id),
            jsonArrayHolds(this.store.dialect, t.listeners.additionalCertificateIds, id),
          ),
        );
      if (users.length > 0) {
        throw new ApiError('in_use', `certificate ${id} is used by ${users.map((u) => u.id).join(', ')}`);
      }
      await q.delete(t.certificates).where(eq(t.certificates.id, id));
    });
  }
}
