import { index, integer, json, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';

export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    tenantId: text('tenant_id').notNull(),
    key: text('key').notNull(),
    requestFingerprint: text('request_fingerprint').notNull(),
    statusCode: integer('status_code').notNull(),
    /** Text as in SQLite: the replayed body, byte for byte. */
    responseBody: text('response_body').notNull(),
    responseHeaders: json('response_headers').$type<Record<string, string>>().notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.key] }), index('idempotency_keys_created_idx').on(t.createdAt)],
);
