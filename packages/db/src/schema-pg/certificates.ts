import { index, json, pgTable, text } from 'drizzle-orm/pg-core';
import { revision, timestamps } from './columns.js';

export const certificates = pgTable(
  'certificates',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    name: text('name').notNull(),
    certificatePem: text('certificate_pem').notNull(),
    /** Needed by the L7 nodes to terminate TLS; never returned by the API and never logged. */
    privateKeyPem: text('private_key_pem').notNull(),
    subject: text('subject').notNull(),
    issuer: text('issuer').notNull(),
    sans: json('sans').$type<string[]>().notNull(),
    notBefore: text('not_before').notNull(),
    notAfter: text('not_after').notNull(),
    fingerprint: text('fingerprint').notNull(),
    ...revision,
    ...timestamps,
  },
  (t) => [index('certificates_tenant_idx').on(t.tenantId, t.id)],
);
