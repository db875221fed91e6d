import { certificates, type Db, listeners, newId } from '@slb/db';
import type { Certificate, CreateCertificate, ListQuery } from '@slb/model';
import { and, asc, eq, or, sql } from 'drizzle-orm';
import { parseCertificate } from '../domain/certificate-pem.js';
import { ApiError, notFound } from '../errors.js';
import type { AuthContext } from './auth.js';
import { checkIfMatch, cursorFilter, nowIso, type Scope, tenantFilter, toPage } from './common.js';
import type { QuotaService } from './quotas.js';

type CertificateRow = typeof certificates.$inferSelect;

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
    private readonly db: Db,
    private readonly quotas?: QuotaService,
    /** Private keys are stored encrypted (secrets/secret-box.ts): never in clear in the database file. */
    private readonly sealSecret: (plain: string) => string = (plain) => plain,
  ) {}

  find(scope: Scope, id: string): CertificateRow {
    const row = this.db
      .select()
      .from(certificates)
      .where(and(eq(certificates.id, id), tenantFilter(certificates.tenantId, scope)))
      .get();
    if (!row) throw notFound('certificate', id);
    return row;
  }

  list(scope: Scope, query: ListQuery) {
    const limit = query.limit ?? 50;
    const rows = this.db
      .select()
      .from(certificates)
      .where(and(tenantFilter(certificates.tenantId, scope), cursorFilter(certificates.id, query.cursor)))
      .orderBy(asc(certificates.id))
      .limit(limit + 1)
      .all();
    return toPage(rows, limit, toCertificate);
  }

  create(auth: AuthContext, input: CreateCertificate): CertificateRow {
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
    this.db.transaction(
      () => {
        this.quotas?.check(auth.tenantId, 'certificates', auth.tenantId);
        this.db
          .insert(certificates)
          .values({ ...row, privateKeyPem: this.sealSecret(input.privateKey) })
          .run();
      },
      { behavior: 'immediate' },
    );
    return row;
  }

  remove(scope: Scope, id: string, ifMatch?: string): void {
    this.db.transaction(() => {
      const row = this.find(scope, id);
      checkIfMatch(ifMatch, row.revision);
      const users = this.db
        .select({ id: listeners.id })
        .from(listeners)
        .where(
          or(
            eq(listeners.certificateId, id),
            sql`EXISTS (SELECT 1 FROM json_each(${listeners.additionalCertificateIds}) WHERE value = ${id})`,
          ),
        )
        .all();
      if (users.length > 0) {
        throw new ApiError('in_use', `certificate ${id} is used by ${users.map((u) => u.id).join(', ')}`);
      }
      this.db.delete(certificates).where(eq(certificates.id, id)).run();
    });
  }
}
