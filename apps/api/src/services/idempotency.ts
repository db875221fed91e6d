import { createHash } from 'node:crypto';
import type { Queries, Store, Tables } from '@slb/db';
import { and, eq, lt } from 'drizzle-orm';
import { ApiError } from '../errors.js';

export interface CreateResult {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

const RETENTION_MS = 24 * 60 * 60 * 1000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/**
 * Runs a create at most once per (tenant, Idempotency-Key): the create and the stored response commit in
 * one transaction, so a retry after a lost response gets the first response and never a second resource.
 */
export class IdempotencyStore {
  private lastPurge = 0;
  constructor(private readonly store: Store) {}

  async run(
    tenantId: string,
    key: string | undefined,
    request: string,
    create: () => CreateResult | Promise<CreateResult>,
  ): Promise<CreateResult & { replayed: boolean }> {
    if (key === undefined) return { ...(await create()), replayed: false };
    if (!KEY_PATTERN.test(key)) {
      throw new ApiError('bad_request', 'Idempotency-Key must be 1-255 visible ASCII characters', [
        { path: '/headers/idempotency-key', message: 'invalid' },
      ]);
    }
    const fingerprint = createHash('sha256').update(request).digest('hex');
    await this.purgeExpired();
    const { t } = this.store;
    return this.store.write(async (q) => {
      // A retry on another replica while the first attempt runs waits for it, then replays its response.
      await this.store.lock(`idempotency:${tenantId}:${key}`);
      const [previous] = await q
        .select()
        .from(t.idempotencyKeys)
        .where(and(eq(t.idempotencyKeys.tenantId, tenantId), eq(t.idempotencyKeys.key, key)));
      if (previous) {
        if (previous.requestFingerprint !== fingerprint) {
          throw new ApiError('idempotency_key_reused', 'this Idempotency-Key was used with a different request');
        }
        return {
          status: previous.statusCode,
          body: JSON.parse(previous.responseBody),
          headers: previous.responseHeaders,
          replayed: true,
        };
      }
      const result = await create();
      await q.insert(t.idempotencyKeys).values({
        tenantId,
        key,
        requestFingerprint: fingerprint,
        statusCode: result.status,
        responseBody: JSON.stringify(result.body),
        responseHeaders: result.headers,
        createdAt: new Date().toISOString(),
      });
      return { ...result, replayed: false };
    });
  }

  private async purgeExpired(): Promise<void> {
    const now = Date.now();
    if (now - this.lastPurge < 60_000) return;
    this.lastPurge = now;
    const before = new Date(now - RETENTION_MS).toISOString();
    await this.store.write((q) => purgeStatement(q, this.store.t, before));
  }
}

/** Deletes the keys stored before `before` (RFC 3339): a range of idempotency_keys_created_idx. */
export const purgeStatement = (q: Queries, t: Tables, before: string) =>
  q.delete(t.idempotencyKeys).where(lt(t.idempotencyKeys.createdAt, before));
