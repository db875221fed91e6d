import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** The first response to a create, replayed for a retry that carries the same Idempotency-Key. */
export const idempotencyKeys = sqliteTable(
  'idempotency_keys',
  {
    tenantId: text('tenant_id').notNull(),
    key: text('key').notNull(),
    /** method, route and a hash of the body: the same key with another request is refused. */
    requestFingerprint: text('request_fingerprint').notNull(),
    statusCode: integer('status_code').notNull(),
    responseBody: text('response_body').notNull(),
    responseHeaders: text('response_headers', { mode: 'json' }).$type<Record<string, string>>().notNull(),
    createdAt: text('created_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.key] }),
    // The purge of keys past their retention, every minute: without it, a pass over every stored response.
    index('idempotency_keys_created_idx').on(t.createdAt),
  ],
);
